import { isAscii } from 'node:buffer';
import { spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The launcher (`dist/main.js`, src/launcher.ts) and the code cache the build keeps in
 * `dist/code-cache/`: which cache a start reads, and when it makes one of its own. `NODE_DEBUG` has
 * the launcher say so on stderr. `npm test` builds before it runs the tests.
 */
const scratch = mkdtempSync(join(tmpdir(), 'sandbox-launcher-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A V8 flag that changes nothing the sandbox does, but makes V8 refuse a cache made without it. */
const OTHER_V8_FLAGS = ['--max-lazy'];

const SERVE = ['--memory', '--port', '0', '--https-port', '0', '--log-level', 'warn'];

interface Run {
  stdout: string;
  stderr: string;
  /** The launcher's lines (NODE_DEBUG), without their `SHIPPING-SANDBOX <pid>:` prefix. */
  launcher: string[];
}

/**
 * Runs the built command (`main`, dist/main.js unless given) with `TMPDIR` as given. A serving command
 * is stopped (SIGTERM) once `until` matches its output; any other runs to its end.
 */
function run(
  nodeArgs: string[],
  args: string[],
  options: {
    tmp: string;
    env?: NodeJS.ProcessEnv;
    until?: RegExp | ((output: string) => boolean);
    main?: string;
  },
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('node', [...nodeArgs, options.main ?? 'dist/main.js', ...args], {
      env: { ...process.env, TMPDIR: options.tmp, NODE_DEBUG: 'shipping-sandbox', ...options.env },
      stdio: 'pipe',
    });
    let stdout = '';
    let stderr = '';
    const stopWhenDone = () => {
      const output = stdout + stderr;
      const done = typeof options.until === 'function' ? options.until(output) : options.until?.test(output);
      if (done) child.kill('SIGTERM');
    };
    child.stdout.on('data', (chunk) => {
      stdout += String(chunk);
      stopWhenDone();
    });
    child.stderr.on('data', (chunk) => {
      stderr += String(chunk);
      stopWhenDone();
    });
    child.once('error', reject);
    child.once('exit', () =>
      resolve({
        stdout,
        stderr,
        launcher: [...stderr.matchAll(/^SHIPPING-SANDBOX \d+: (.*)$/gm)].map((match) => match[1] as string),
      }),
    );
  });
}

const freshTmp = () => mkdtempSync(join(scratch, 'tmp-'));
const version = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;

describe('the launcher', () => {
  it("reads the build's code cache, made for this Node version", async () => {
    expect(existsSync('dist/main.js'), 'npm test builds dist/ first').toBe(true);
    expect(readdirSync('dist/code-cache').some((name) => name.includes(`-${process.version}-`))).toBe(true);
    // In ASCII, so that it is read as one-byte text.
    expect(isAscii(readFileSync('dist/sandbox.cjs'))).toBe(true);
    const tmp = freshTmp();
    const { stdout, launcher } = await run([], ['--version'], { tmp });
    expect(stdout).toBe(`${version}\n`);
    expect(launcher).toEqual([expect.stringMatching(/^code cache accepted \(\d+ bytes\)$/)]);
    // A start that the build's cache serves keeps nothing of its own.
    const served = await run([], SERVE, { tmp, until: /"ready":true/ });
    expect(served.launcher).toEqual([expect.stringMatching(/^code cache accepted/)]);
    expect(readdirSync(tmp).filter((name) => name.includes('code-cache'))).toEqual([]);
  });

  it("makes a cache of its own once ready when V8 refuses the build's, and reads it next time", async () => {
    const tmp = freshTmp();
    const first = await run(OTHER_V8_FLAGS, SERVE, { tmp, until: /code cache (written|not written)/ });
    expect(first.stdout).toMatch(/"ready":true/);
    expect(first.launcher).toEqual([
      expect.stringMatching(/^code cache rejected/),
      expect.stringMatching(/^code cache written to .*shipping-sandbox-code-cache-/),
    ]);
    const second = await run(OTHER_V8_FLAGS, ['--version'], { tmp });
    expect(second.stdout).toBe(`${version}\n`);
    expect(second.launcher).toEqual([expect.stringMatching(/^code cache accepted/)]);
    // A start without the flag still reads the build's cache: the other one is named by its flags.
    const plain = await run([], ['--version'], { tmp });
    expect(plain.stdout).toBe(`${version}\n`);
    expect(plain.launcher).toEqual([expect.stringMatching(/^code cache accepted/)]);
  });

  it("names the bundle's own folder in its stack traces, wherever dist/ was built", async () => {
    // A stack taken inside the bundle.
    const probe = resolve('test', 'stack-probe.cjs');
    const stackOf = (output: Run) => JSON.parse(/^STACK (.*)$/m.exec(output.stderr)?.[1] ?? 'null') as string;
    const built = resolve('dist', 'sandbox.cjs');

    // Here, the build's cache: made for this folder, and naming it.
    const here = await run(['-r', probe], SERVE, { tmp: freshTmp(), until: /^STACK /m });
    expect(here.launcher).toEqual([expect.stringMatching(/^code cache accepted/)]);
    expect(stackOf(here)).toContain(`(${built}:`);

    // dist/ copied elsewhere, its code cache with it, beside what the bundle reads from its project.
    const elsewhere = realpathSync(mkdtempSync(join(scratch, 'elsewhere-')));
    cpSync('dist', join(elsewhere, 'dist'), { recursive: true });
    cpSync('package.json', join(elsewhere, 'package.json'));
    for (const shared of ['node_modules', 'fixtures', 'scenarios'])
      symlinkSync(realpathSync(shared), join(elsewhere, shared), 'dir');
    const main = join(elsewhere, 'dist', 'main.js');
    const copied = join(elsewhere, 'dist', 'sandbox.cjs');
    const tmp = freshTmp();
    // The build's cache is not this folder's: the first start compiles, then keeps one of its own.
    const first = await run(['-r', probe], SERVE, {
      tmp,
      main,
      until: (output) => /^STACK /m.test(output) && /code cache (accepted|written|not written)/.test(output),
    });
    expect(first.launcher).toEqual([
      expect.stringMatching(/^no code cache for /),
      expect.stringMatching(/^code cache written to /),
    ]);
    expect(stackOf(first)).toContain(`(${copied}:`);
    expect(stackOf(first)).not.toContain(built);
    // The next start reads that cache, and names this folder too.
    const second = await run(['-r', probe], SERVE, { tmp, main, until: /^STACK /m });
    expect(second.launcher).toEqual([expect.stringMatching(/^code cache accepted/)]);
    expect(stackOf(second)).toContain(`(${copied}:`);
    expect(stackOf(second)).not.toContain(built);
  });

  it("leaves V8's flags to node's command line, where npm start and the image cap the young generation", async () => {
    const cap = '--max-semi-space-size=4';
    const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> })
      .scripts;
    expect(scripts.start).toBe(`node ${cap} dist/main.js`);
    // The image's flags: test/containers.test.ts.
    // Node documents setting V8's flags once the process runs as unsafe: nothing in the sandbox does.
    const built = readFileSync('dist/main.js', 'utf8') + readFileSync('dist/sandbox.cjs', 'latin1');
    expect(built).not.toMatch(/setFlagsFromString/);
    // A start with the flag serves.
    const capped = await run([cap], SERVE, { tmp: freshTmp(), until: /"ready":true/ });
    expect(capped.stdout).toMatch(/"ready":true/);
  });

  it('compiles without a cache and keeps none with SANDBOX_CODE_CACHE=off', async () => {
    const tmp = freshTmp();
    const served = await run(OTHER_V8_FLAGS, SERVE, {
      tmp,
      env: { SANDBOX_CODE_CACHE: 'off' },
      until: /"ready":true|code cache (written|not written)/,
    });
    expect(served.launcher).toEqual(['code cache off']);
    expect(readdirSync(tmp).filter((name) => name.includes('code-cache'))).toEqual([]);
  });
});
