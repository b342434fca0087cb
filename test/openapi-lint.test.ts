import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestSandbox } from './helpers.js';

/**
 * The OpenAPI document as two widely used linters judge it, with their recommended rules: Redocly's
 * and Spectral's (`spectral:oas`). Errors fail; warnings (an operation without a description, a
 * loopback server URL) are the linters' taste, not breakage. Each runs as its command line, on the
 * document the sandbox serves, written to a file of its own.
 */

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const bin = (pkg: string, path: string) => join(dirname(require.resolve(`${pkg}/package.json`)), path);

const scratch = mkdtempSync(join(tmpdir(), 'sandbox-openapi-lint-'));
const documentFile = join(scratch, 'openapi.json');
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs a linter in the scratch folder; they exit 1 when they find errors, which the output then lists. */
async function lint(args: string[]): Promise<string> {
  const env = {
    ...process.env,
    // Nothing leaves the machine: no usage reports, no update checks.
    REDOCLY_TELEMETRY: 'off',
    REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
    REDOCLY_SUPPRESS_NOTIFICATIONS: 'true',
    DO_NOT_TRACK: '1',
    NO_COLOR: '1',
  };
  try {
    return (await run(process.execPath, args, { cwd: scratch, env, maxBuffer: 32 * 1024 * 1024 })).stdout;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    if (stdout?.trim().startsWith('{') || stdout?.trim().startsWith('[')) return stdout;
    throw new Error(`${args[0]} did not run: ${stderr ?? error}`);
  }
}

beforeAll(async () => {
  const sandbox = await createTestSandbox();
  const answer = await sandbox.call('GET', '/openapi.json', { key: null });
  expect(answer.status).toBe(200);
  writeFileSync(documentFile, answer.text);
  writeFileSync(join(scratch, 'redocly.yaml'), 'extends:\n  - recommended\n');
  writeFileSync(join(scratch, '.spectral.yaml'), 'extends: ["spectral:oas"]\n');
});

describe.concurrent('the OpenAPI document', { timeout: 120_000 }, () => {
  it("has no error by Redocly's recommended rules", async () => {
    const output = await lint([
      bin('@redocly/cli', 'bin/cli.js'),
      'lint',
      documentFile,
      '--config',
      join(scratch, 'redocly.yaml'),
      '--format',
      'json',
    ]);
    const { totals, problems } = JSON.parse(output) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
    };
    const errors = problems
      .filter((problem) => problem.severity === 'error')
      .map((problem) => `${problem.ruleId} at ${problem.location[0]?.pointer}: ${problem.message}`);
    expect(errors).toEqual([]);
    expect(totals.errors).toBe(0);
  });

  it("has no error by Spectral's OpenAPI rules", async () => {
    const output = await lint([
      bin('@stoplight/spectral-cli', 'dist/index.js'),
      'lint',
      documentFile,
      '--ruleset',
      join(scratch, '.spectral.yaml'),
      '--format',
      'json',
      '--quiet',
    ]);
    const problems = JSON.parse(output) as {
      code: string;
      severity: number;
      message: string;
      path: string[];
    }[];
    // Severity 0 is an error (1 a warning, 2 information, 3 a hint).
    const errors = problems
      .filter((problem) => problem.severity === 0)
      .map((problem) => `${problem.code} at ${problem.path.join('.')}: ${problem.message}`);
    expect(errors).toEqual([]);
  });
});
