import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { selfSignedCertificate } from '../src/http/certificate.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { callSandbox, newAccountAt, runCli, spawnCli } from './cli-harness.js';
import { shipmentRequest } from './helpers.js';
import { startProxy } from './listen-harness.js';
import { closedPortUrl, type ReceivedRequest, startReceiver } from './receiver.js';

/**
 * `shipping-sandbox listen`, the built command as a child process, against a sandbox started with
 * `--webhook-targets public`: it refuses to send to loopback, so the receivers below (on loopback)
 * are reached only through the command's own connection. Each test works in an account of its own.
 */

const SPAWNS = 60_000;

let sandbox: RunningSandbox;
beforeAll(async () => {
  sandbox = await startServer(testConfig({ webhookTargets: 'public' }));
});
afterAll(async () => {
  await sandbox.close();
});

const api = (method: string, path: string, key: string | null, body?: unknown) =>
  callSandbox(sandbox.origin, method, path, key, body);

/**
 * A running `listen`: its output as it comes, and `waitFor` to wait until its stdout or stderr
 * shows something (the command's own lines, never the wall clock).
 */
function startListen(origin: string, key: string, args: string[]) {
  const child = spawnCli(origin, ['listen', ...args], { SHIPPING_SANDBOX_KEY: key });
  const output = { stdout: '', stderr: '' };
  const waiters: (() => void)[] = [];
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  for (const stream of ['stdout', 'stderr'] as const)
    child[stream].on('data', (chunk) => {
      output[stream] += String(chunk);
      for (const wake of waiters.splice(0)) wake();
    });
  return {
    output,
    async waitFor(stream: 'stdout' | 'stderr', pattern: RegExp): Promise<RegExpMatchArray> {
      for (;;) {
        const found = output[stream].match(pattern);
        if (found) return found;
        const woken = new Promise<void>((resolve) => waiters.push(resolve));
        const code = await Promise.race([woken.then(() => undefined), exited]);
        if (code !== undefined)
          throw new Error(`listen exited with ${code}: ${output.stderr}${output.stdout}`);
      }
    },
    stop() {
      child.kill('SIGTERM');
    },
  };
}

/** What the key has left of its rate limit, after this request (which counts). */
async function remaining(key: string): Promise<number> {
  const answer = await fetch(`${sandbox.origin}/v1/shipments`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return Number(answer.headers.get('x-ratelimit-remaining'));
}

/** The signature as the reference documents it, computed here without the sandbox's code. */
const expectedSignature = (secret: string, body: Buffer) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** The request the receiver got for this event (waiting for it). */
async function requestFor(receiver: Awaited<ReturnType<typeof startReceiver>>, eventId: string) {
  for (;;) {
    const found = receiver.requests.find((request) => request.headers['service-event-id'] === eventId);
    if (found) return found;
    await receiver.nextRequest();
  }
}

describe.concurrent('listen', () => {
  it(
    "forwards the account's events, signed, as webhook deliveries, and retries a failure on the clock",
    async () => {
      const [key, other] = await Promise.all([newAccountAt(sandbox.origin), newAccountAt(sandbox.origin)]);
      // A frozen clock at the start of a minute: a frozen clock's window also ends once the real time it
      // had left has passed, so the rate limit's minute does not roll over while the test counts.
      await api('POST', '/_sandbox/clock', key, { frozen: true });
      const { now } = (await api('GET', '/_sandbox/clock', key)).body;
      const nextMinute = Math.floor(Date.parse(now) / 60_000) * 60_000 + 60_000;
      await api('POST', '/_sandbox/clock/advance', key, { to: new Date(nextMinute).toISOString() });
      const receiver = await startReceiver([200]);
      // The sandbox itself may not send there.
      const refused = await api('POST', '/v1/webhooks', key, {
        url: receiver.url,
        events: ['shipment.created'],
      });
      expect(refused.status).toBe(422);
      const before = await remaining(key);
      const listen = startListen(sandbox.origin, key, [
        '--forward-to',
        receiver.url,
        '--events',
        'shipment.created,label.generated',
        '--pretty',
      ]);
      try {
        const ready = await listen.waitFor('stderr', /^Ready\b.*\bsigning secret (whsec_\S+)$/m);
        const printed = await runCli(sandbox.origin, ['listen', '--print-secret'], {
          SHIPPING_SANDBOX_KEY: key,
        });
        expect(printed).toMatchObject({ code: 0, stdout: `${ready[1]}\n` });
        const secret = ready[1] as string;

        // Another account's event, and an event the command did not ask for, never come.
        await api('POST', '/v1/shipments', other, shipmentRequest());
        await api('POST', '/_sandbox/events/trigger', key, { event: 'tracking.delivered' });
        await api('POST', '/v1/shipments', key, shipmentRequest());
        const [event] = (await api('GET', '/_sandbox/events?event=shipment.created', key)).body.data;
        const request: ReceivedRequest = await requestFor(receiver, event.id);
        expect(receiver.requests).toHaveLength(1);
        expect(request.method).toBe('POST');
        expect(request.url).toBe('/hooks');
        expect(JSON.parse(request.body.toString())).toEqual(event);
        expect(request.headers).toMatchObject({
          'content-type': 'application/json',
          'service-event-id': event.id,
          'service-delivery-attempt': '0',
          'user-agent': 'ShippingSandbox-Webhooks/1.0',
          'service-signature': expectedSignature(secret, request.body),
        });
        await listen.waitFor('stdout', new RegExp(`<-- \\[200\\] shipment.created \\[${event.id}\\]`));
        expect(listen.output.stdout).toContain(`--> shipment.created [${event.id}]`);
        // The command's calls so far (opening, the stream, the secret, the answer) count for nothing:
        // only this test's own shipment and the request reading what is left.
        expect(await remaining(key)).toBe(before - 2);

        // A failure is retried on the account's retry ladder: the clock moves, the command sends again.
        receiver.reply([500, 202]);
        const triggered = await api('POST', '/_sandbox/events/trigger', key, { event: 'label.generated' });
        await requestFor(receiver, triggered.body.id);
        await listen.waitFor('stdout', /<-- \[500\] label.generated/);
        // The command prints the answer, then reports it: the retry exists once the report is in.
        const [session] = (await api('GET', '/_sandbox/listeners', key)).body.data;
        await vi.waitFor(async () => {
          const [retry] = (await api('GET', `/_sandbox/listeners/${session.id}/deliveries`, key)).body.data;
          expect(retry).toMatchObject({ event: 'label.generated', attempt: 1, status: 'scheduled' });
        });
        const advanced = await api('POST', '/_sandbox/clock/advance', key, { by: '61s' });
        expect(advanced.status).toBe(200);
        const retry = receiver.requests.at(-1) as ReceivedRequest;
        expect(retry.headers).toMatchObject({
          'service-event-id': triggered.body.id,
          'service-delivery-attempt': '1',
        });
        await listen.waitFor('stdout', /<-- \[202\] label.generated/);

        expect(session).toMatchObject({ forward_to: receiver.url, connected: true });
        const deliveries = (await api('GET', `/_sandbox/listeners/${session.id}/deliveries`, key)).body.data;
        expect(deliveries.map((d: any) => [d.event, d.attempt, d.status, d.response_status])).toEqual([
          ['label.generated', 1, 'succeeded', 202],
          ['label.generated', 0, 'failed', 500],
          ['shipment.created', 0, 'succeeded', 200],
        ]);
        expect(deliveries[1].response_excerpt).toBe('receiver says 500');

        // Nor are they journaled: the journal holds the test's own calls.
        const journal = (await api('GET', '/_sandbox/requests?limit=100', key)).body.data;
        expect(journal.map((entry: any) => `${entry.method} ${entry.path}`)).toEqual([
          'GET /v1/shipments',
          'POST /v1/shipments',
          'GET /v1/shipments',
          'POST /v1/webhooks',
        ]);
      } finally {
        listen.stop();
        await receiver.close();
      }
    },
    SPAWNS,
  );

  it(
    'loses nothing raised while its connection was cut, once it is back within 10 s',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const receiver = await startReceiver([200]);
      const proxy = await startProxy(sandbox.origin);
      const listen = startListen(proxy.url, key, ['--forward-to', receiver.url]);
      try {
        const ready = await listen.waitFor('stderr', /^Ready\b.*\((lsn_\w+);/m);
        proxy.cut();
        await listen.waitFor('stderr', /Lost the sandbox/);
        const raised = await api('POST', '/_sandbox/events/trigger', key, { event: 'tracking.exception' });
        proxy.restore();
        await listen.waitFor('stderr', /Reconnected to lsn_/);
        const request = await requestFor(receiver, raised.body.id);
        expect(request.headers['service-delivery-attempt']).toBe('0');
        const line = JSON.parse(
          (await listen.waitFor('stdout', new RegExp(`^.*${raised.body.id}.*$`, 'm')))[0],
        );
        expect(line).toMatchObject({ event: 'tracking.exception', response_status: 200, error: null });
        // The same session all along, and the delivery recorded once.
        const sessions = (await api('GET', '/_sandbox/listeners', key)).body.data;
        expect(sessions.map((s: any) => s.id)).toEqual([ready[1]]);
        await vi.waitFor(async () => {
          const deliveries = (await api('GET', `/_sandbox/listeners/${ready[1]}/deliveries`, key)).body.data;
          expect(deliveries.map((d: any) => [d.event_id, d.status])).toEqual([[raised.body.id, 'succeeded']]);
        });
        expect(receiver.requests).toHaveLength(1);
      } finally {
        listen.stop();
        await Promise.all([proxy.close(), receiver.close()]);
      }
    },
    SPAWNS,
  );

  it(
    'reports an answer holding a NUL (a gzip header has one) as the sandbox can keep it',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const receiver = await startReceiver([{ status: 500, body: Buffer.from('ab\0cd') }]);
      const listen = startListen(sandbox.origin, key, ['--forward-to', receiver.url]);
      try {
        const ready = await listen.waitFor('stderr', /^Ready\b.*\((lsn_\w+);/m);
        const raised = await api('POST', '/_sandbox/events/trigger', key, { event: 'tracking.exception' });
        await requestFor(receiver, raised.body.id);
        // Recorded, not left `sending`: failed, with its retry on the account's clock.
        await vi.waitFor(async () => {
          const deliveries = (await api('GET', `/_sandbox/listeners/${ready[1]}/deliveries`, key)).body.data;
          expect(deliveries.map((d: any) => [d.status, d.response_status, d.response_excerpt])).toEqual([
            ['scheduled', null, null],
            ['failed', 500, 'ab\uFFFDcd'],
          ]);
        });
        expect(listen.output.stderr).not.toMatch(/refused/);
      } finally {
        listen.stop();
        await receiver.close();
      }
    },
    SPAWNS,
  );

  it(
    'forwards to an https URL with a self-signed certificate with --skip-verify',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const now = Date.now();
      const receiver = await startReceiver([200], {
        tls: selfSignedCertificate({
          commonName: 'receiver',
          organization: 'test',
          names: ['127.0.0.1'],
          notBefore: new Date(now - 60_000),
          notAfter: new Date(now + 3_600_000),
        }),
      });
      const listen = startListen(sandbox.origin, key, [
        '--forward-to',
        receiver.url,
        '--skip-verify',
        '--events',
        'label.voided',
      ]);
      try {
        await listen.waitFor('stderr', /^Ready\b/m);
        const raised = await api('POST', '/_sandbox/events/trigger', key, { event: 'label.voided' });
        await requestFor(receiver, raised.body.id);
        const line = await listen.waitFor('stdout', /^\{.*\}$/m);
        expect(JSON.parse(line[0])).toMatchObject({ event_id: raised.body.id, response_status: 200 });
      } finally {
        listen.stop();
        await receiver.close();
      }
    },
    SPAWNS,
  );

  it(
    "prints the account's events without --forward-to, from the same stream",
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const listen = startListen(sandbox.origin, key, ['--events', 'shipment.cancelled']);
      try {
        await listen.waitFor('stderr', /^Ready! Printing shipment.cancelled/m);
        const shipment = await api('POST', '/v1/shipments', key, shipmentRequest());
        await api('DELETE', `/v1/shipments/${shipment.body.id}`, key);
        const line = await listen.waitFor('stdout', /^\{.*\}$/m);
        const [event] = (await api('GET', '/_sandbox/events?event=shipment.cancelled', key)).body.data;
        expect(JSON.parse(line[0])).toEqual(event);
        expect(listen.output.stdout.trim().split('\n')).toHaveLength(1);
      } finally {
        listen.stop();
      }
    },
    SPAWNS,
  );

  it(
    'exits 1 saying why when the key is unknown or no sandbox answers',
    async () => {
      const [unknown, away] = await Promise.all([
        runCli(sandbox.origin, ['listen', '--forward-to', 'localhost:3000/hooks'], {
          SHIPPING_SANDBOX_KEY: 'svc_test_NoSuchKey0000000000000000000000',
        }),
        runCli(new URL(await closedPortUrl()).origin, ['listen', '--pretty']),
      ]);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toMatch(/The API key is not valid\. \(401 invalid_api_key\)/);
      expect(away.code).toBe(1);
      expect(away.stderr).toMatch(/cannot reach the sandbox at http:\/\/127\.0\.0\.1:\d+/);
    },
    SPAWNS,
  );
});
