import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_KEY, shipmentRequest } from './helpers.js';
import { startReceiver } from './receiver.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The command line on a data directory; resolves with its origin once the banner is out. */
async function start(dataDir: string, flags: string[]) {
  // The built command (`npm test` builds it first), run by Node itself: the signal reaches the server.
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    [
      'dist/main.js',
      '--port',
      '0',
      '--https-port',
      '0',
      '--data-dir',
      dataDir,
      '--log-level',
      'warn',
      ...flags,
    ],
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
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  cleanups.push(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const origin = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      const found = /"origin":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(stdout)?.[1];
      if (found) resolve(found);
    });
    void exited.then(() => reject(new Error(`exited early: ${stderr}`)));
  });
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${origin}${path}`, {
      method,
      headers: { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return { child, exited, call, origin };
}

/**
 * A POST sent with `Expect: 100-continue`: `received` resolves when the server has read its headers
 * (it answers `100 Continue`), so a test knows the request is in flight; `answer` when it answers.
 */
function inFlight(origin: string, path: string, body: unknown) {
  const text = JSON.stringify(body);
  let received!: () => void;
  const receivedPromise = new Promise<void>((resolve) => {
    received = resolve;
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const outgoing = httpRequest(`${origin}${path}`, {
      method: 'POST',
      agent: false,
      headers: {
        authorization: `Bearer ${DEFAULT_KEY}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
        expect: '100-continue',
      },
    });
    outgoing.on('continue', () => {
      received();
      outgoing.end(text);
    });
    outgoing.on('response', (response) => {
      let data = '';
      response.on('data', (chunk) => {
        data += String(chunk);
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: data }));
    });
    outgoing.on('error', reject);
  });
  return { received: receivedPromise, answer };
}

describe('shutdown', () => {
  it('on SIGTERM waits at most --shutdown-timeout for a hanging send, answers the request waiting on it, exits 0, and sends it again after the next start', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sandbox-shutdown-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const receiver = await startReceiver(['hang']);
    cleanups.push(() => receiver.close());

    // A minute's webhook timeout: only the shutdown's one second can end this send.
    const flags = ['--shutdown-timeout', '1s', '--webhook-timeout', '60s'];
    const first = await start(dataDir, flags);
    await first.call('POST', '/_sandbox/clock', { frozen: true });
    await first.call('POST', '/v1/webhooks', {
      url: receiver.url,
      events: ['shipment.created'],
      secret: 'whsec_0123456789abcdef',
    });
    const sent = receiver.nextRequest();
    expect((await first.call('POST', '/v1/shipments', shipmentRequest())).status).toBe(201);
    const onTheWire = await sent;
    // An advance waits for the account's sends on the wire before it answers. The signal goes once
    // the server has the request: its `100 Continue` says it has read the headers.
    const advance = inFlight(first.origin, '/_sandbox/clock/advance', { by: '1h' });
    await advance.received;

    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const answered = await advance.answer;
    expect(answered.status).toBe(200);
    expect((JSON.parse(answered.body) as { now: string }).now).toMatch(/Z$/);

    // The send that was cut off has no outcome: it goes out again after the next start.
    receiver.reply([200]);
    const again = receiver.nextRequest();
    const second = await start(dataDir, flags);
    const resent = await again;
    expect(resent.headers['service-event-id']).toBe(onTheWire.headers['service-event-id']);
    expect(resent.body.equals(onTheWire.body)).toBe(true);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('stops accepting at once, and with nothing in flight exits 0 without waiting', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sandbox-shutdown-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    // Ten minutes of grace, which an idle sandbox must not wait for (the test would time out).
    const sandbox = await start(dataDir, ['--shutdown-timeout', '10m']);
    expect((await sandbox.call('GET', '/v1/shipments')).status).toBe(200);
    sandbox.child.kill('SIGTERM');
    expect(await sandbox.exited).toBe(0);
  });
});
