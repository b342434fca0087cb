import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bannerText, readyLine } from '../src/cli/ready.js';
import { testConfig } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { DEFAULT_KEY, shipmentRequest } from './helpers.js';

describe('the real server over a socket', () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startServer(testConfig());
  });
  afterAll(() => sandbox.close());

  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${sandbox.origin}${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${DEFAULT_KEY}`,
        'content-type': 'application/json',
        ...init.headers,
      },
    });

  it('binds a free port when asked for port 0', () => {
    expect(sandbox.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(sandbox.origin).not.toMatch(/:0$/);
    expect(sandbox.cdnUrl).toBe(`${sandbox.origin}/cdn`);
  });

  it('answers /healthz without a key', async () => {
    const response = await fetch(`${sandbox.origin}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok', database: 'sqlite' });
  });

  it('creates, reads, lists and cancels a shipment', async () => {
    const created = await api('/v1/shipments', { method: 'POST', body: JSON.stringify(shipmentRequest()) });
    expect(created.status).toBe(201);
    const shipment = (await created.json()) as { id: string; status: string };
    expect(shipment.status).toBe('created');

    const read = await api(`/v1/shipments/${shipment.id}`);
    expect(await read.json()).toEqual(shipment);

    const list = (await (await api('/v1/shipments?limit=1')).json()) as { data: { id: string }[] };
    expect(list.data[0]?.id).toBe(shipment.id);

    const cancelled = await api(`/v1/shipments/${shipment.id}`, { method: 'DELETE' });
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toMatchObject({ id: shipment.id, status: 'cancelled' });
  });

  it('gives parallel suites their own accounts', async () => {
    const response = await fetch(`${sandbox.origin}/_sandbox/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ plan: 'enterprise' }),
    });
    const account = (await response.json()) as { api_key: string };
    const list = await fetch(`${sandbox.origin}/v1/shipments`, {
      headers: { authorization: `Bearer ${account.api_key}` },
    });
    expect(((await list.json()) as { meta: { total: number } }).meta.total).toBe(0);
  });

  it('sends the rate-limit headers, on successes and errors alike, counting down', async () => {
    const response = await fetch(`${sandbox.origin}/_sandbox/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ plan: 'starter' }),
    });
    const { api_key: key } = (await response.json()) as { api_key: string };
    const call = (path: string) =>
      fetch(`${sandbox.origin}${path}`, { headers: { authorization: `Bearer ${key}` } });
    const found = await call('/v1/shipments');
    const missing = await call('/v1/shipments/shp_00000000000000000000000000');
    expect(found.status).toBe(200);
    expect(missing.status).toBe(404);
    expect(found.headers.get('content-type')).toMatch(/^application\/json/);
    expect(missing.headers.get('content-type')).toMatch(/^application\/json/);
    const limits = [found, missing].map((answer) => [
      answer.headers.get('x-ratelimit-limit'),
      answer.headers.get('x-ratelimit-remaining'),
    ]);
    expect(limits).toEqual([
      ['60', '59'],
      ['60', '58'],
    ]);
    expect(Number(found.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
  });

  it('rejects a body over 1 MiB sent in chunks without a length', async () => {
    const chunk = new TextEncoder().encode(`{"reference":"${'x'.repeat(64 * 1024)}`);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > 20) {
          controller.enqueue(new TextEncoder().encode('"}'));
          controller.close();
          return;
        }
        sent += 1;
        controller.enqueue(chunk);
      },
    });
    const response = await api('/v1/shipments', { method: 'POST', body, duplex: 'half' } as RequestInit);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('request_too_large');
  });
});

describe('the command line', () => {
  // tsx's loader in the one process (tsx's own command would add a parent that signals must cross).
  const run = (args: string[], env: Record<string, string> = {}) =>
    spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
      env: { ...process.env, ...env },
      stdio: 'pipe',
    });

  const collect = (child: ChildProcessWithoutNullStreams) => {
    const output = { stdout: '', stderr: '' };
    child.stdout.on('data', (chunk) => {
      output.stdout += String(chunk);
    });
    child.stderr.on('data', (chunk) => {
      output.stderr += String(chunk);
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    return { output, exited };
  };

  it('starts on a data directory, prints its ready line and port file, and stops cleanly on SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sandbox-e2e-'));
    const portFile = join(dataDir, 'ports.json');
    const flags = ['--port', '0', '--https-port', '0', '--data-dir', dataDir, '--log-level', 'info'];
    const child = run([...flags, '--port-file', portFile]);
    try {
      const { output, exited } = collect(child);
      // stdout is a pipe: one JSON line to wait for, not the banner.
      const line = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', () => {
          const found = output.stdout.split('\n').find((text) => text.includes('"ready":true'));
          if (found) resolve(found);
        });
        child.on('exit', () => reject(new Error(`exited early: ${output.stderr}`)));
      });
      const ready = JSON.parse(line);
      const origin = ready.origin as string;
      expect(origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(ready).toEqual({
        ready: true,
        version: expect.stringMatching(/^\d+\.\d+\.\d+/),
        origin,
        url: `${origin}/v1`,
        httpsOrigin: expect.stringMatching(/^https:\/\/localhost:\d+$/),
        httpsUrl: `${ready.httpsOrigin}/v1`,
        certificatePath: join(dataDir, 'tls', 'cert.pem'),
        cdnUrl: `${origin}/cdn`,
        data: join(dataDir, 'sandbox.db'),
        database: 'sqlite',
        apiKey: DEFAULT_KEY,
        dashboardUrl: `${origin}/dashboard#key=${DEFAULT_KEY}`,
        docsUrl: `${origin}/docs`,
        pid: child.pid,
        // No --replica-id: the host and the process, unique among replicas.
        replica: `${hostname()}-${child.pid}`,
      });
      // Written before the ready line, whole (under a temporary name, then renamed).
      expect(JSON.parse(readFileSync(portFile, 'utf8'))).toEqual({
        port: Number(new URL(origin).port),
        httpsPort: Number(new URL(ready.httpsOrigin).port),
        origin,
      });
      expect(readdirSync(dataDir).filter((name) => name.includes('.tmp'))).toEqual([]);
      const health = await fetch(`${origin}/healthz`);
      expect(health.status).toBe(200);
      const metrics = await (await fetch(`${origin}/metrics`)).text();
      expect(metrics).toContain(
        `sandbox_info{version="${ready.version}",engine="sqlite",replica="${ready.replica}"} 1`,
      );

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      // Every log line (JSON: stdout is a pipe) names the replica: the certificate made, the requests, the stop.
      const logLines = output.stdout
        .split('\n')
        .filter((text) => text !== '' && text !== line)
        .map((text) => JSON.parse(text) as { msg: string; replica: string; path?: string });
      expect(logLines.map((entry) => entry.msg)).toEqual(
        expect.arrayContaining(['made a new HTTPS certificate', 'request', 'shutting down']),
      );
      expect(logLines.find((entry) => entry.msg === 'request')?.path).toBe('/healthz');
      for (const entry of logLines) expect(entry.replica).toBe(ready.replica);
      // Gone at a clean stop: a script waiting for the next start does not read a dead port.
      expect(existsSync(portFile)).toBe(false);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('stops with exit code 1 when it cannot write its port file, rather than leave a script waiting', async () => {
    const { output, exited } = collect(
      run(['--memory', '--port', '0', '--https-port', '0', '--port-file', '/nonexistent-dir/ports.json']),
    );
    expect(await exited).toBe(1);
    expect(output.stderr).toMatch(/cannot write --port-file: ENOENT/);
    expect(output.stdout).not.toContain('"ready"');
  });

  it('prints the banner, with the dashboard link for the default key, on a terminal', () => {
    const info = {
      origin: 'http://127.0.0.1:4010',
      httpsOrigin: 'https://localhost:4443',
      certificatePath: '/data/tls/cert.pem',
      cdnUrl: 'http://127.0.0.1:4010/cdn',
      location: ':memory:',
      engine: 'sqlite' as const,
      apiKey: DEFAULT_KEY as string | undefined,
      adminToken: false,
      strictHttps: false,
      version: '1.2.3',
      replica: 'web-1',
    };
    const banner = bannerText(info);
    expect(banner).toMatch(/^Shipping Sandbox 1\.2\.3 is ready\.\n/);
    expect(banner).toContain('  API        http://127.0.0.1:4010/v1\n');
    expect(banner).toContain(`  Dashboard  http://127.0.0.1:4010/dashboard#key=${DEFAULT_KEY}\n`);
    expect(banner).toContain(`  Test key   ${DEFAULT_KEY}\n`);
    expect(banner).toContain('  Data       SQLite, in memory (lost at exit)\n');
    expect(banner).toContain(
      `  curl -H "Authorization: Bearer ${DEFAULT_KEY}" http://127.0.0.1:4010/v1/shipments`,
    );
    expect(bannerText({ ...info, strictHttps: true })).not.toContain('curl -H');
    expect(JSON.parse(readyLine(info))).toMatchObject({ ready: true, url: 'http://127.0.0.1:4010/v1' });
    expect(readyLine(info).split('\n')).toHaveLength(2);

    // Where there is no default account (beyond loopback, or with an admin token): no key anywhere.
    for (const adminToken of [false, true]) {
      const keyless = bannerText({ ...info, apiKey: undefined, adminToken });
      expect(keyless).not.toContain(DEFAULT_KEY);
      expect(keyless).not.toContain('Test key');
      expect(keyless).toContain('  Dashboard  http://127.0.0.1:4010/dashboard\n');
      expect(keyless).toContain('  Accounts   no default account');
      expect(keyless).toContain('curl -H "Authorization: Bearer $KEY" http://127.0.0.1:4010/v1/shipments');
      expect(keyless.includes('Bearer $SANDBOX_ADMIN_TOKEN')).toBe(adminToken);
      expect(JSON.parse(readyLine({ ...info, apiKey: undefined, adminToken }))).toMatchObject({
        apiKey: null,
        dashboardUrl: 'http://127.0.0.1:4010/dashboard',
      });
    }
  });

  it('refuses a bad flag value with a clear message and exit code 2', async () => {
    const { output, exited } = collect(run(['--port', 'seventy']));
    expect(await exited).toBe(2);
    expect(output.stderr).toContain("Invalid value 'seventy' for --port: must be a number.");
  });
});
