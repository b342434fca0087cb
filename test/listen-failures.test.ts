import { type AddressInfo, createServer } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { ListenerStore } from '../src/listeners/store.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { callSandbox, newAccountAt, spawnCli } from './cli-harness.js';
import { startReceiver } from './receiver.js';

/**
 * `shipping-sandbox listen` when something goes wrong between the command and the sandbox: an answer
 * the sandbox could not take for a moment, a receiver's odd status, and an advance that hands the
 * command more deliveries than it forwards at once. One at a time: the first replaces a store method
 * of this process for a moment.
 */
const SPAWNS = 60_000;

let sandbox: RunningSandbox;
beforeAll(async () => {
  sandbox = await startServer(testConfig({ webhookTargets: 'public', webhookTimeoutMs: 500 }));
});
afterAll(async () => {
  await sandbox.close();
});
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const api = (method: string, path: string, key: string, body?: unknown) =>
  callSandbox(sandbox.origin, method, path, key, body);

/** A running `listen` on its session, stopped after the test. */
async function listen(key: string, forwardTo: string, ...args: string[]) {
  const child = spawnCli(sandbox.origin, ['listen', '--forward-to', forwardTo, ...args], {
    SHIPPING_SANDBOX_KEY: key,
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  cleanups.push(() => {
    child.kill('SIGTERM');
    return exited;
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const ready = await vi.waitFor(
    () => {
      const found = /^Ready\b.*\((lsn_\w+);/m.exec(stderr);
      if (!found) throw new Error(`not ready yet: ${stderr}`);
      return found;
    },
    { timeout: 15_000, interval: 20 },
  );
  const sessionId = ready[1] as string;
  return {
    deliveries: async () =>
      (await api('GET', `/_sandbox/listeners/${sessionId}/deliveries?limit=100`, key)).body.data as {
        attempt: number;
        status: string;
        response_status: number | null;
      }[],
  };
}

describe('listen', () => {
  it(
    'tells the sandbox an answer again when it could not take it the first time',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const receiver = await startReceiver([200]);
      cleanups.push(() => receiver.close());
      const session = await listen(key, receiver.url);
      const original = ListenerStore.prototype.recordOutcome;
      let refused = 0;
      ListenerStore.prototype.recordOutcome = function (this: ListenerStore, ...args) {
        if (refused++ === 0) return Promise.reject(new Error('the database went away for a moment'));
        return original.apply(this, args);
      };
      cleanups.push(() => {
        ListenerStore.prototype.recordOutcome = original;
      });

      expect((await api('POST', '/_sandbox/events/trigger', key, { event: 'label.generated' })).status).toBe(
        201,
      );
      await vi.waitFor(
        async () => expect((await session.deliveries()).map((d) => d.status)).toEqual(['succeeded']),
        {
          timeout: 10_000,
          interval: 50,
        },
      );
      expect(refused).toBe(2);
      expect(receiver.requests).toHaveLength(1);
    },
    SPAWNS,
  );

  it(
    "records a receiver's odd status (799) as its answer, not leaving the delivery sending",
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const odd = createServer((socket) => {
        socket.on('data', () =>
          socket.end('HTTP/1.1 799 Odd\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok'),
        );
        socket.on('error', () => undefined);
      });
      await new Promise<void>((resolve) => odd.listen(0, '127.0.0.1', resolve));
      cleanups.push(() => new Promise((resolve) => odd.close(resolve)));
      const session = await listen(key, `http://127.0.0.1:${(odd.address() as AddressInfo).port}/hooks`);

      expect((await api('POST', '/_sandbox/events/trigger', key, { event: 'label.generated' })).status).toBe(
        201,
      );
      await vi.waitFor(
        async () =>
          expect((await session.deliveries()).find((d) => d.attempt === 0)).toMatchObject({
            status: 'failed',
            response_status: 799,
          }),
        { timeout: 10_000, interval: 50 },
      );
    },
    SPAWNS,
  );

  it(
    'has an advance wait for every answer it handed over, though the command forwards four at a time',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      expect((await api('POST', '/_sandbox/clock', key, { frozen: true })).status).toBe(200);
      // Six rounds of four forwards that each time out: longer than one forward's timeout and margin.
      const retries = 24;
      // Each first try fails at once; each retry meets a receiver that never answers (a timeout).
      const receiver = await startReceiver([...Array(retries).fill(500), 'hang']);
      cleanups.push(() => receiver.close());
      const session = await listen(key, receiver.url, '--events', 'label.generated');
      for (let i = 0; i < retries; i++)
        expect(
          (await api('POST', '/_sandbox/events/trigger', key, { event: 'label.generated' })).status,
        ).toBe(201);
      await vi.waitFor(
        async () =>
          expect((await session.deliveries()).filter((d) => d.status === 'scheduled')).toHaveLength(retries),
        { timeout: 10_000, interval: 50 },
      );

      expect((await api('POST', '/_sandbox/clock/advance', key, { by: '61s' })).status).toBe(200);
      const retried = (await session.deliveries()).filter((d) => d.attempt === 1);
      expect(retried.map((d) => d.status)).toEqual(Array(retries).fill('failed'));
    },
    SPAWNS,
  );
});
