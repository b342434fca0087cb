import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';

const scratch = mkdtempSync(join(tmpdir(), 'sandbox-embed-stop-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** How long the child may take in all; it needs a second or two. A bound, not a measurement. */
const CHILD_BOUND_MS = 30_000;

it('leaves nothing behind after stop(): the process exits by itself, the working directory is untouched', async () => {
  const cwd = join(scratch, 'cwd');
  const temp = join(scratch, 'tmp');
  for (const dir of [cwd, temp]) mkdirSync(dir);
  const tsx = pathToFileURL(resolve('node_modules/tsx/dist/loader.mjs')).href;
  const child = spawn(process.execPath, ['--import', tsx, resolve('test/embed-stop-child.ts')], {
    cwd,
    env: { ...process.env, TMPDIR: temp },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  let bound: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    new Promise<{ code: number | null }>((done) => child.once('exit', (code) => done({ code }))),
    new Promise<'still running'>((done) => {
      bound = setTimeout(() => done('still running'), CHILD_BOUND_MS);
    }),
  ]);
  clearTimeout(bound);
  if (outcome === 'still running') child.kill('SIGKILL');

  // Still running, its last line lists what it held after stop() (process.getActiveResourcesInfo()).
  expect({ outcome, stderr }, stdout).toEqual({ outcome: { code: 0 }, stderr: '' });
  const report = JSON.parse(stdout) as { delivery: string; timedOut: string; https: string; left: string[] };
  expect(report.delivery).toBe('succeeded');
  expect(report.timedOut).toMatch(/within 30 ms/);
  expect(report.https).toMatch(/^https:\/\/localhost:\d+$/);
  expect(readdirSync(cwd)).toEqual([]);
}, 60_000);
