import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeDirectories } from '../src/core/directories.js';

/**
 * A `--data-dir` the sandbox cannot make or write stops the built command within five seconds, with
 * status 1 and a line that names the directory and the reason. Node's own recursive mkdir spun for
 * ever on some of these (a parent that takes no directories), so each run has a deadline.
 */

const scratch = mkdtempSync(join(tmpdir(), 'sandbox-unusable-'));
afterAll(() => {
  chmodSync(join(scratch, 'read-only'), 0o755);
  rmSync(scratch, { recursive: true, force: true });
});

const aFile = join(scratch, 'a-file');
writeFileSync(aFile, 'not a directory');
const dangling = join(scratch, 'dangling');
symlinkSync(join(scratch, 'nowhere'), dangling);
mkdirSync(join(scratch, 'read-only'));
chmodSync(join(scratch, 'read-only'), 0o555);

/**
 * A directory this process cannot write: a mode of 555 does not stop root, whom sysfs still refuses
 * (the tests may run as root in a container).
 */
const readOnly = process.getuid?.() === 0 ? '/sys/fs' : join(scratch, 'read-only');

interface Run {
  status: number | null;
  stderr: string;
  stdout: string;
  ms: number;
}

function start(dataDir: string): Promise<Run> {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    ['dist/main.js', '--data-dir', dataDir, '--port', '0', '--https-port', '0', '--log-level', 'warn'],
    { stdio: 'pipe' },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += String(chunk);
  });
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  // Past the deadline the run has failed: it is stopped so that the test reports it, not hangs.
  const deadline = setTimeout(() => child.kill('SIGKILL'), 10_000);
  return new Promise((resolve) =>
    child.on('exit', (status) => {
      clearTimeout(deadline);
      resolve({ status, stderr, stdout, ms: performance.now() - started });
    }),
  );
}

const cases: [string, string, RegExp][] = [
  [
    'a directory that takes no new directories (/proc)',
    '/proc/nope',
    /its parent does not take new directories/,
  ],
  [
    'a path below one',
    '/proc/nope/deeper',
    /making \/proc\/nope\): its parent does not take new directories/,
  ],
  ['a path that is a file', aFile, /is a file, not a directory/],
  ['a path below a file', join(aFile, 'data'), /a part of the path is a file, not a directory/],
  [
    'a path through a dangling symbolic link',
    join(dangling, 'data'),
    /is a file \(or a broken symbolic link\)/,
  ],
  [
    'a directory it cannot write',
    readOnly,
    /cannot be written: (permission denied|operation not permitted|the file system is read-only)/,
  ],
];

describe('a --data-dir that cannot be used', () => {
  it.each(cases)(
    '%s: exits 1 at once, naming the directory and the reason',
    async (_what, dataDir, reason) => {
      if (dataDir.startsWith('/proc/') && !existsSync('/proc/self')) return;
      const run = await start(dataDir);
      expect(run.status).toBe(1);
      expect(run.ms).toBeLessThan(5_000);
      const line = run.stderr.trim();
      expect(line).toMatch(/^shipping-sandbox: cannot start: the data directory /);
      expect(line).toContain(dataDir);
      expect(line).toMatch(reason);
      expect(line).toContain('--data-dir');
      expect(line).not.toMatch(/\n\s+at /);
      expect(run.stdout).not.toContain('"ready"');
    },
  );
});

describe('makeDirectories', () => {
  it('makes every missing level, and takes a directory that exists', () => {
    const deep = join(scratch, 'made', 'one', 'two');
    makeDirectories(deep);
    expect(existsSync(deep)).toBe(true);
    makeDirectories(deep);
    expect(existsSync(deep)).toBe(true);
  });
});
