import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';

/**
 * The README is a promise to a new user: what it prints runs as printed. The walkthrough is run with
 * bash, curl and jq against a real server, and its output compared with the block the README shows; the
 * first test is the file the package test runs; every link leads to a file that exists.
 */

const README = readFileSync('README.md', 'utf8');

/** The body of the first fenced block of `language` after `marker`. */
function blockAfter(marker: string, language: string): string {
  const start = README.indexOf(marker);
  expect(start, `the README has "${marker}"`).toBeGreaterThanOrEqual(0);
  const fence = `\`\`\`${language}\n`;
  const open = README.indexOf(fence, start);
  expect(open, `a ${language} block after "${marker}"`).toBeGreaterThan(start);
  const close = README.indexOf('\n```', open + fence.length);
  return README.slice(open + fence.length, close + 1);
}

describe('the README', () => {
  let server: RunningSandbox;
  let scratch: string;

  beforeAll(async () => {
    server = await startServer(testConfig());
    scratch = mkdtempSync(join(tmpdir(), 'readme-'));
  });

  afterAll(async () => {
    await server?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('walks a parcel from label to delivery as written, and prints what it says', async () => {
    const script = blockAfter('## A parcel from label to delivery', 'sh');
    const printed = blockAfter('It prints:', 'text');
    expect(script).toContain('B=http://127.0.0.1:4010\n');
    for (const tool of ['curl', 'jq']) {
      const found = (process.env.PATH ?? '').split(':').some((dir) => existsSync(join(dir, tool)));
      expect(found, `${tool} is installed (.ci/run installs it on Debian)`).toBe(true);
    }
    const { stdout, stderr } = await promisify(execFile)(
      'bash',
      ['-euo', 'pipefail', '-c', script.replace('B=http://127.0.0.1:4010\n', `B=${server.origin}\n`)],
      { cwd: scratch, timeout: 30_000 },
    );
    expect(stderr).toBe('');
    expect(stdout).toBe(printed);
  });

  it('shows as its first test the example the package test runs', () => {
    const example = readFileSync('examples/vitest/first.test.ts', 'utf8');
    expect(blockAfter('## In your test suite', 'ts')).toBe(example);
  });

  it("shows lines of the webhook example's own, as that file has them", () => {
    const example = new Set(
      readFileSync('examples/vitest/shipping.test.ts', 'utf8')
        .split('\n')
        .map((line) => line.trim()),
    );
    const excerpt = blockAfter('your webhook handler checks deliveries', 'ts')
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean);
    expect(excerpt.length).toBeGreaterThan(5);
    expect(excerpt.filter((line) => !example.has(line))).toEqual([]);
  });

  it('and the docs link only to files, and headings, that exist', () => {
    const documents = [
      'README.md',
      ...readdirSync('docs')
        .filter((name) => name.endsWith('.md'))
        .map((name) => `docs/${name}`),
    ];
    const missing: string[] = [];
    for (const document of documents) {
      const text = readFileSync(document, 'utf8');
      // Markdown links and images to relative paths (web addresses are not files), with their anchors.
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target as string)) continue;
        const [file, anchor] = (target as string).split('#') as [string, string | undefined];
        const path = file === '' ? document : join(dirname(document), file);
        if (!existsSync(path)) missing.push(`${document} → ${target}`);
        else if (anchor !== undefined && !anchorsOf(readFileSync(path, 'utf8')).has(anchor))
          missing.push(`${document} → ${target} (no such heading)`);
      }
    }
    expect(missing).toEqual([]);
  });
});

/** The anchors GitHub gives a document's headings. */
function anchorsOf(markdown: string): Set<string> {
  const headings = [...markdown.matchAll(/^#{1,6} (.+)$/gm)].map(([, text]) => text as string);
  return new Set(
    headings.map((text) =>
      text
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\- ]/gu, '')
        .replace(/ /g, '-'),
    ),
  );
}
