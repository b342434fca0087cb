import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { callSandbox, newAccountAt, runCli, spawnCli } from './cli-harness.js';
import { testDatabaseUrl } from './databases.js';
import { DEFAULT_KEY, shipmentRequest } from './helpers.js';
import { closedPortUrl } from './receiver.js';

/**
 * `logs tail`: the built command as a child process, following a real sandbox's request stream over
 * loopback. Each test waits on the lines the command prints, never on the clock.
 */

const SPAWNS = 90_000;

let sandbox: RunningSandbox;
beforeAll(async () => {
  sandbox = await startServer(testConfig({ database: await testDatabaseUrl() }));
});
afterAll(() => sandbox.close());

/**
 * Starts `logs tail`, with what it prints on each stream, and a way to wait for a line. Stopped when
 * the test ends (`using`), whatever its outcome.
 */
function tail(origin: string, args: string[], env: Record<string, string>) {
  const child = spawnCli(origin, ['logs', 'tail', ...args], env);
  const printed = { stdout: '', stderr: '' };
  const waiters: { stream: 'stdout' | 'stderr'; test: RegExp; resolve: () => void }[] = [];
  for (const stream of ['stdout', 'stderr'] as const)
    child[stream].on('data', (chunk) => {
      printed[stream] += String(chunk);
      for (const waiter of [...waiters])
        if (waiter.stream === stream && waiter.test.test(printed[stream])) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
    });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  /** Resolves once what `stream` printed matches `test`; fails if the command ends first. */
  const until = (stream: 'stdout' | 'stderr', test: RegExp) =>
    new Promise<void>((resolve, reject) => {
      if (test.test(printed[stream])) return resolve();
      waiters.push({ stream, test, resolve });
      void exited.then((code) => reject(new Error(`logs tail exited with ${code}: ${printed.stderr}`)));
    });
  const lines = () => printed.stdout.trim().split('\n').filter(Boolean);
  return { printed, until, lines, exited, [Symbol.dispose]: () => child.kill('SIGKILL') };
}

describe.concurrent('the command line: logs tail', () => {
  it(
    "prints each of the account's requests as it happens, one JSON line each in a pipe",
    async () => {
      const [key, other] = await Promise.all([newAccountAt(sandbox.origin), newAccountAt(sandbox.origin)]);
      using logs = tail(sandbox.origin, [], { SHIPPING_SANDBOX_KEY: key });
      await logs.until(
        'stderr',
        /Tailing the account's requests at http:\/\/127\.0\.0\.1:\d+ \(Ctrl-C to stop\)\n/,
      );

      await callSandbox(sandbox.origin, 'GET', '/v1/shipments?limit=2', other);
      const created = await callSandbox(sandbox.origin, 'POST', '/v1/shipments', key, shipmentRequest());
      await callSandbox(sandbox.origin, 'POST', '/v1/labels', key, {
        shipment_id: created.body.id,
        size: 'A4',
      });
      await callSandbox(sandbox.origin, 'GET', '/v1/shipments?limit=2', key);
      await logs.until('stdout', /limit=2/);

      const entries = logs.lines().map((line) => JSON.parse(line));
      expect(entries).toEqual([
        expect.objectContaining({
          method: 'POST',
          path: '/v1/shipments',
          status: 201,
          code: null,
          field: null,
        }),
        expect.objectContaining({
          method: 'POST',
          path: '/v1/labels',
          status: 422,
          code: 'invalid_field',
          field: 'size',
          duration_ms: expect.any(Number),
          id: expect.stringMatching(/^req_/),
        }),
        expect.objectContaining({ method: 'GET', path: '/v1/shipments', query: 'limit=2', status: 200 }),
      ]);
      // Watching counted nowhere: the journal holds the account's three requests and nothing else.
      const journal = (await callSandbox(sandbox.origin, 'GET', '/_sandbox/requests', key)).body.data;
      expect(journal.map((entry: { id: string }) => entry.id).reverse()).toEqual(
        entries.map((entry: { id: string }) => entry.id),
      );
    },
    SPAWNS,
  );

  it(
    'prints readable lines with --pretty, filtered by status, method and path',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      using logs = tail(
        sandbox.origin,
        ['--pretty', '--status', '4xx,201', '--method', 'post', '--path', '/shipments*'],
        {
          SHIPPING_SANDBOX_KEY: key,
        },
      );
      await logs.until('stderr', /Tailing/);
      await callSandbox(sandbox.origin, 'GET', '/v1/shipments', key);
      await callSandbox(sandbox.origin, 'POST', '/v1/labels', key, {});
      const bad = { ...shipmentRequest(), parcel: { weight: -1, length: 10, width: 10, height: 10 } };
      await callSandbox(sandbox.origin, 'POST', '/v1/shipments', key, bad);
      await callSandbox(sandbox.origin, 'POST', '/v1/shipments', key, shipmentRequest());
      await logs.until('stdout', / 201 /);

      expect(logs.lines()).toEqual([
        expect.stringMatching(
          /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ {2}POST \/v1\/shipments {2}422 invalid_field \(parcel\.weight\) {2}[\d.]+ ms {2}req_\S+$/,
        ),
        expect.stringMatching(/^\S+Z {2}POST \/v1\/shipments {2}201 {2}[\d.]+ ms {2}req_\S+$/),
      ]);
    },
    SPAWNS,
  );

  it(
    'marks a request refused for a revoked key, and one whose connection a fault dropped',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const made = await callSandbox(sandbox.origin, 'POST', '/_sandbox/keys', key, { name: 'old' });
      await callSandbox(sandbox.origin, 'DELETE', `/_sandbox/keys/${made.body.id}`, key);
      await callSandbox(sandbox.origin, 'POST', '/_sandbox/faults', key, { path: '/v1/rates', drop: true });
      using logs = tail(sandbox.origin, ['--pretty'], { SHIPPING_SANDBOX_KEY: key });
      await logs.until('stderr', /Tailing/);
      await callSandbox(sandbox.origin, 'GET', '/v1/shipments', made.body.value);
      await fetch(`${sandbox.origin}/v1/rates`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: '{}',
      }).catch(() => undefined);
      await logs.until('stdout', /dropped/);
      expect(logs.lines()).toEqual([
        expect.stringMatching(
          new RegExp(
            `GET /v1/shipments {2}401 invalid_api_key {2}[\\d.]+ ms {2}revoked key ${made.body.id} {2}req_`,
          ),
        ),
        expect.stringMatching(/POST \/v1\/rates {2}dropped connection_dropped {2}[\d.]+ ms {2}req_/),
      ]);
    },
    SPAWNS,
  );

  it(
    'exits with 1 and says why when the sandbox is not there or refuses the key',
    async () => {
      const [nowhere, refused] = await Promise.all([
        runCli(new URL(await closedPortUrl()).origin, ['logs', 'tail']),
        runCli(sandbox.origin, ['logs', 'tail', '--key', 'svc_test_not-a-key']),
      ]);
      expect(nowhere.code).toBe(1);
      expect(nowhere.stderr).toMatch(
        /^error: cannot reach the sandbox at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/,
      );
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe('error: The API key is not valid. (401 invalid_api_key)\n');
    },
    SPAWNS,
  );
});

describe('the command line: logs tail across a restart', () => {
  it(
    'says the sandbox went away, waits for it, and goes on once it is back',
    async () => {
      const database = await testDatabaseUrl();
      const first = await startServer(testConfig({ database }));
      const { port } = new URL(first.origin);
      using logs = tail(first.origin, [], { SHIPPING_SANDBOX_KEY: DEFAULT_KEY });
      let second: RunningSandbox | undefined;
      try {
        await logs.until('stderr', /Tailing/);
        await first.shutdown(10_000);
        await logs.until(
          'stderr',
          /Lost the sandbox at http:\/\/127\.0\.0\.1:\d+; trying again every second\.\n/,
        );
        second = await startServer(testConfig({ port: Number(port), database }));
        expect(second.origin).toBe(first.origin);
        await logs.until('stderr', /The sandbox answers again\.\n/);
        await callSandbox(second.origin, 'GET', '/v1/shipments', DEFAULT_KEY);
        await logs.until('stdout', /shipments/);
        expect(JSON.parse(logs.lines()[0] as string)).toMatchObject({ path: '/v1/shipments', status: 200 });
      } finally {
        await second?.close();
      }
    },
    SPAWNS,
  );
});
