import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { DataDirectoryInUse, lockDataDirectory } from '../src/db/data-dir-lock.js';
import { startServer } from '../src/server.js';
import { DEFAULT_KEY, shipmentRequest } from './helpers.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-lock-'));
  dirs.push(dir);
  return dir;
}

describe('the data directory lock, in one process', () => {
  it('refuses a second owner, naming the directory and the owning process, until the first lets go', () => {
    const dir = dataDir();
    const first = lockDataDirectory(dir);
    let refusal: unknown;
    try {
      lockDataDirectory(dir);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(DataDirectoryInUse);
    expect((refusal as Error).message).toContain(`the data directory ${dir} is in use`);
    expect((refusal as Error).message).toContain(`(process ${process.pid})`);

    first.release();
    // Releasing twice is harmless, and the directory is free again.
    first.release();
    const second = lockDataDirectory(dir);
    second.release();
  });

  it('keeps a second server off the directory while the first one serves, and lets one on after it closes', async () => {
    const dir = dataDir();
    const config = testConfig({ memory: false, dataDir: dir });
    const first = await startServer(config);
    try {
      await expect(startServer(config)).rejects.toThrow(`the data directory ${dir} is in use`);
      const health = await fetch(`${first.origin}/healthz`);
      expect(health.status).toBe(200);
      const created = await fetch(`${first.origin}/v1/shipments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(shipmentRequest()),
      });
      expect(created.status).toBe(201);
    } finally {
      await first.close();
    }
    const next = await startServer(config);
    await next.close();
  });

  it('takes no lock with --memory: in-memory servers share nothing', async () => {
    const [a, b] = await Promise.all([startServer(testConfig()), startServer(testConfig())]);
    try {
      expect((await fetch(`${a.origin}/healthz`)).status).toBe(200);
      expect((await fetch(`${b.origin}/healthz`)).status).toBe(200);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('the data directory lock, between server processes', () => {
  // Node itself runs the built command (`npm test` builds it first): the pid killed is the server's
  // own, and it starts without compiling the sources.
  const run = (dir: string) =>
    spawn(
      process.execPath,
      ['dist/main.js', '--data-dir', dir, '--port', '0', '--https-port', '0', '--log-level', 'warn'],
      { stdio: 'pipe' },
    );

  function watch(child: ChildProcessWithoutNullStreams) {
    const output = { stdout: '', stderr: '' };
    child.stdout.on('data', (chunk) => {
      output.stdout += String(chunk);
    });
    child.stderr.on('data', (chunk) => {
      output.stderr += String(chunk);
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    /** Resolves with the API's origin once the ready line is out. */
    const ready = new Promise<string>((resolve, reject) => {
      child.stdout.on('data', () => {
        const origin = /"origin":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(output.stdout)?.[1];
        if (origin && output.stdout.includes('"ready":true')) resolve(origin);
      });
      child.on('exit', () => reject(new Error(`exited before it was ready: ${output.stderr}`)));
    });
    // Only awaited for servers expected to start; a refused one's rejection is no error.
    ready.catch(() => undefined);
    return { output, exited, ready };
  }

  const shipments = (origin: string, init: RequestInit = {}) =>
    fetch(`${origin}/v1/shipments`, {
      ...init,
      headers: { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' },
    });

  it('stops a second server at once with status 1, leaves the first serving, and frees the directory on kill -9', async () => {
    const dir = dataDir();
    const firstChild = run(dir);
    const first = watch(firstChild);
    try {
      const origin = await first.ready;

      const second = watch(run(dir));
      expect(await second.exited).toEqual({ code: 1, signal: null });
      expect(second.output.stderr).toContain(`the data directory ${dir} is in use`);
      expect(second.output.stderr).toContain(`(process ${firstChild.pid})`);
      expect(second.output.stdout).not.toContain('Shipping Sandbox is ready');

      // The first was not disturbed: it reads and writes as before.
      const created = await shipments(origin, { method: 'POST', body: JSON.stringify(shipmentRequest()) });
      expect(created.status).toBe(201);
      const { id } = (await created.json()) as { id: string };

      // A crash leaves no lock behind: the operating system drops it with the process.
      firstChild.kill('SIGKILL');
      expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });

      const thirdChild = run(dir);
      const third = watch(thirdChild);
      try {
        const thirdOrigin = await third.ready;
        const list = (await (await shipments(thirdOrigin)).json()) as { data: { id: string }[] };
        expect(list.data.map((shipment) => shipment.id)).toContain(id);
      } finally {
        thirdChild.kill('SIGTERM');
        expect((await third.exited).code).toBe(0);
      }
    } finally {
      if (firstChild.exitCode === null && firstChild.signalCode === null) firstChild.kill('SIGKILL');
    }
  }, 60_000);
});
