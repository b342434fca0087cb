import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { signatureHeader } from '../src/webhooks/signature.js';
import { callSandbox, newAccountAt, type Run, runCli } from './cli-harness.js';
import { shipmentRequest } from './helpers.js';
import { type Receiver, startReceiver } from './receiver.js';

/**
 * The commands that manage an account (`webhooks create|delete`, `keys`, `faults`, `reset`) and
 * `trigger`'s word on where its event went: the built command as a child process against a real
 * sandbox, each test in an account of its own. None of what the commands do may count against the
 * account's own client: each test ends with the account's journal, which the integration report
 * and the rate limits follow, holding only the test's own API calls.
 */

const SPAWNS = 90_000;

let sandbox: RunningSandbox;
let receiver: Receiver;
beforeAll(async () => {
  [sandbox, receiver] = await Promise.all([startServer(testConfig()), startReceiver([200])]);
});
afterAll(async () => {
  await Promise.all([sandbox.close(), receiver.close()]);
});

/** Runs the command in the account of `key`. */
const cli = (key: string, args: string[]): Promise<Run> =>
  runCli(sandbox.origin, args, { SHIPPING_SANDBOX_KEY: key });
const api = (method: string, path: string, key: string, body?: unknown) =>
  callSandbox(sandbox.origin, method, path, key, body);

/** The JSON a piped command printed: one document, and nothing said on stderr. */
function json(run: Run): any {
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout);
}

/** The account's journal, oldest first, as `METHOD path` lines. */
async function journaled(key: string): Promise<string[]> {
  const entries = (await api('GET', '/_sandbox/requests', key)).body.data as {
    method: string;
    path: string;
  }[];
  return entries.map((entry) => `${entry.method} ${entry.path}`).reverse();
}

describe.concurrent('the command line: webhooks', () => {
  it(
    'registers a webhook with a signing secret it makes, lists it, and deletes it',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const made = json(
        await cli(key, ['webhooks', 'create', receiver.url, '--events', 'tracking.delivered']),
      );
      expect(made).toMatchObject({
        id: expect.stringMatching(/^wh_/),
        url: receiver.url,
        events: ['tracking.delivered'],
        status: 'active',
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
      });
      expect(json(await cli(key, ['webhooks'])).data).toEqual([
        expect.not.objectContaining({ secret: expect.anything() }),
      ]);
      expect(json(await cli(key, ['webhooks', 'list'])).data.map((w: { id: string }) => w.id)).toEqual([
        made.id,
      ]);

      // The secret printed is the one deliveries are signed with.
      const delivered = receiver.nextRequest();
      await api('POST', '/_sandbox/events/trigger', key, { event: 'tracking.delivered' });
      const request = await delivered;
      expect(request.headers['service-signature']).toBe(
        signatureHeader(made.secret, request.body.toString()),
      );

      expect(json(await cli(key, ['webhooks', 'delete', made.id]))).toEqual({ id: made.id, deleted: true });
      expect(json(await cli(key, ['webhooks'])).data).toEqual([]);
      expect(await journaled(key)).toEqual([]);
    },
    SPAWNS,
  );

  it(
    'takes a secret of its own and every event by default, and reads on a terminal',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const secret = 'whsec_my-own-long-secret';
      const readable = await cli(key, ['webhooks', 'create', receiver.url, '--secret', secret, '--pretty']);
      expect(readable.code).toBe(0);
      expect(readable.stdout).toMatch(/^Created wh_\S+: every event to http:\/\/127\.0\.0\.1:\d+\/hooks\n$/);
      const [webhook] = json(await cli(key, ['webhooks'])).data;
      expect(webhook.events).toHaveLength(7);
      const list = await cli(key, ['webhooks', '--pretty']);
      expect(list.stdout).toMatch(new RegExp(`^${webhook.id} +active +shipment\\.created,`, 'm'));
      const deleted = await cli(key, ['webhooks', 'delete', webhook.id, '--pretty']);
      expect(deleted.stdout).toBe(`Deleted ${webhook.id}.\n`);
    },
    SPAWNS,
  );

  it(
    'lists every webhook, page after page, of an account that holds more than a page',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const accountId = (await api('GET', '/_sandbox/account', key)).body.id as string;
      // Past the cap, as an account registered before there was one: only then is there a second page.
      const { db, stores } = sandbox.sandbox;
      for (let i = 0; i < 102; i++) {
        await stores.webhooks.insert(db, {
          id: `wh_cli${String(i).padStart(3, '0')}`,
          accountId,
          url: `http://127.0.0.1:9/hooks/${i}`,
          events: ['shipment.created'],
          secret: 'whsec_0123456789abcdef',
          status: 'active',
          createdAt: Date.UTC(2026, 0, 1) + i,
        });
      }
      const listed = json(await cli(key, ['webhooks']));
      expect(listed.data.map((w: { id: string }) => w.id)).toEqual(
        Array.from({ length: 102 }, (_, i) => `wh_cli${String(101 - i).padStart(3, '0')}`),
      );
      expect(listed.meta).toEqual({ total: 102, cursor: null, has_more: false });
      expect(await journaled(key)).toEqual([]);
    },
    SPAWNS,
  );

  it(
    'refuses what the sandbox refuses, with its message, status and code',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const [unknown, badUrl, shortSecret] = await Promise.all([
        cli(key, ['webhooks', 'delete', 'wh_01JD0000000000000000000000', '--pretty']),
        cli(key, ['webhooks', 'create', 'ftp://shop.example.com/hooks', '--pretty']),
        cli(key, ['webhooks', 'create', receiver.url, '--secret', 'short', '--pretty']),
      ]);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toMatch(/^error: .*wh_01JD0000000000000000000000.* \(404 not_found\)\n$/);
      expect(badUrl.code).toBe(1);
      expect(badUrl.stderr).toMatch(/\(422 invalid_field, field url\)\n$/);
      expect(shortSecret.code).toBe(1);
      expect(shortSecret.stderr).toMatch(/\(422 invalid_field, field secret\)\n$/);
    },
    SPAWNS,
  );
});

describe.concurrent('the command line: trigger says where the event went', () => {
  it(
    'warns, and still triggers, when no webhook is subscribed to the event',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const run = await cli(key, ['trigger', 'tracking.exception']);
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({
        event: 'tracking.exception',
        id: expect.stringMatching(/^evt_/),
      });
      expect(run.stderr).toBe(
        'warning: no webhook is subscribed to tracking.exception, so it was sent nowhere; subscribe one with ' +
          '`shipping-sandbox webhooks create <url> --events tracking.exception`\n',
      );
      const events = (await api('GET', '/_sandbox/events', key)).body.data;
      expect(events.map((e: { event: string }) => e.event)).toEqual(['tracking.exception']);
    },
    SPAWNS,
  );

  it(
    'warns when the subscribed webhooks are not active, and names those it goes to',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const made = await api('POST', '/_sandbox/webhooks', key, {
        url: receiver.url,
        events: ['tracking.delivered'],
        secret: 'whsec_a-long-enough-secret',
      });
      const sent = await cli(key, ['trigger', 'tracking.delivered', '--pretty']);
      expect(sent.stderr).toBe('');
      expect(sent.stdout).toMatch(
        new RegExp(
          `^Triggered tracking\\.delivered as evt_\\S+ at \\S+\\.\\nDelivering to ${made.body.id}: `,
        ),
      );
      await api('PATCH', `/v1/webhooks/${made.body.id}`, key, { status: 'disabled' });
      const idle = await cli(key, ['trigger', 'tracking.delivered', '--pretty']);
      const warning = `warning: the webhooks subscribed to tracking.delivered are not active, so it was sent nowhere: ${made.body.id} (disabled)`;
      // Once: in the readable answer, not on stderr as well (both reach the same terminal).
      expect(idle.stdout).toContain(`${warning}\n`);
      expect(idle.stderr).toBe('');
      const piped = await cli(key, ['trigger', 'tracking.delivered']);
      expect(JSON.parse(piped.stdout)).toMatchObject({ event: 'tracking.delivered' });
      expect(piped.stderr).toBe(`${warning}\n`);
    },
    SPAWNS,
  );
});

describe.concurrent('the command line: keys', () => {
  it(
    'makes a key with the scopes asked for, lists keys, and revokes one at once',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const made = json(await cli(key, ['keys', 'create', 'CI', '--scopes', 'shipments:read']));
      expect(made).toMatchObject({
        name: 'CI',
        scopes: ['shipments:read'],
        value: expect.stringMatching(/^svc_test_/),
      });
      expect((await api('GET', '/v1/shipments', made.value)).status).toBe(200);
      expect((await api('POST', '/v1/shipments', made.value, shipmentRequest())).status).toBe(403);

      const listed = json(await cli(key, ['keys'])).data;
      expect(listed.map((k: { name: string }) => k.name)).toContain('CI');
      const readable = await cli(key, ['keys', 'list', '--pretty']);
      expect(readable.stdout).toMatch(/^ID +NAME +SCOPES +LAST 4 +LAST USED +REVOKED +CREATED\n/);
      expect(readable.stdout).toMatch(
        new RegExp(`^${made.id} +CI +shipments:read +${made.value.slice(-4)} +\\d{4}-\\S+ +- +`, 'm'),
      );

      const revoked = json(await cli(key, ['keys', 'revoke', made.id]));
      expect(revoked).toEqual({ id: made.id, revoked_at: expect.any(String) });
      expect((await api('GET', '/v1/shipments', made.value)).status).toBe(401);
      const again = await cli(key, ['keys', 'revoke', 'key_01JD0000000000000000000000', '--pretty']);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/\(404 not_found\)\n$/);
    },
    SPAWNS,
  );

  it(
    "prints a new key's value once, with the line that uses it",
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const run = await cli(key, ['keys', 'create', 'QA laptop', '--pretty']);
      expect(run.stdout).toMatch(
        /^Created key key_\S+ \(QA laptop\), scopes: all\.\nIts value \(shown only now\): svc_test_/,
      );
      expect(run.stdout).toMatch(/\n {2}export SHIPPING_SANDBOX_KEY=svc_test_\S+\n$/);
    },
    SPAWNS,
  );
});

describe.concurrent('the command line: faults', () => {
  it(
    'injects an error answer with a Retry-After given as a duration, for as many requests as asked',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const rule = json(
        await cli(key, [
          'faults',
          'create',
          '/v1/shipments',
          '--method',
          'POST',
          '--status',
          '503',
          '--retry-after',
          '1m',
          '--times',
          '1',
        ]),
      );
      expect(rule).toMatchObject({
        id: expect.stringMatching(/^flt_/),
        method: 'POST',
        path: '/v1/shipments',
        status: 503,
        code: 'service_unavailable',
        retry_after: 60,
        remaining: 1,
      });
      const failed = await fetch(`${sandbox.origin}/v1/shipments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(shipmentRequest()),
      });
      expect(failed.status).toBe(503);
      expect(failed.headers.get('retry-after')).toBe('60');
      expect((await api('POST', '/v1/shipments', key, shipmentRequest())).status).toBe(201);
      const [spent] = json(await cli(key, ['faults'])).data;
      expect(spent).toMatchObject({ id: rule.id, remaining: 0 });
    },
    SPAWNS,
  );

  it(
    'takes a delay with units (a plain number is seconds), lists rules, and deletes one or all',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const slow = json(await cli(key, ['faults', 'create', '/labels/*', '--delay', '1.5s']));
      expect(slow).toMatchObject({ path: '/v1/labels/*', delay_ms: 1500, status: null, method: null });
      const dropped = json(await cli(key, ['faults', 'create', '/v1/rates', '--delay', '2', '--drop']));
      expect(dropped).toMatchObject({ delay_ms: 2000, drop: true });
      const readable = await cli(key, ['faults', '--pretty']);
      expect(readable.stdout).toMatch(
        new RegExp(
          `^${dropped.id} +any +/v1/rates +wait 2000 ms, then drop the connection +until deleted `,
          'm',
        ),
      );
      expect(readable.stdout).toMatch(
        new RegExp(`^${slow.id} +any +/v1/labels/\\* +wait 1500 ms +until deleted `, 'm'),
      );

      expect(json(await cli(key, ['faults', 'delete', slow.id]))).toEqual({ id: slow.id, deleted: true });
      const missing = await cli(key, ['faults', 'delete', slow.id, '--pretty']);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/\(404 not_found\)\n$/);
      expect(json(await cli(key, ['faults', 'delete', '--all']))).toEqual({ deleted: true });
      expect(json(await cli(key, ['faults'])).data).toEqual([]);
      expect(await journaled(key)).toEqual([]);
    },
    SPAWNS,
  );

  it(
    'lists every rule past a page, or the newest n with --limit and a word on the rest',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      await api('POST', '/_sandbox/clock', key, { frozen: true });
      for (let i = 0; i < 23; i++)
        await api('POST', '/_sandbox/faults', key, { path: `/v1/x/${i}`, status: 503 });
      const every = json(await cli(key, ['faults']));
      expect(every.data.map((rule: { path: string }) => rule.path)).toEqual(
        Array.from({ length: 23 }, (_, i) => `/v1/x/${22 - i}`),
      );
      expect(json(await cli(key, ['faults', '--limit', '3'])).meta).toMatchObject({
        total: 23,
        has_more: true,
      });
      const newest = await cli(key, ['faults', '--limit', '3', '--pretty']);
      expect(newest.stdout.match(/^flt_/gm)).toHaveLength(3);
      expect(newest.stdout).toMatch(/\nThe newest 3 of 23 rules: leave out --limit to see them all\.\n$/);
    },
    SPAWNS,
  );

  it(
    'passes on what only the sandbox can judge: a rule that does nothing',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      const run = await cli(key, ['faults', 'create', '/v1/shipments', '--pretty']);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(
        /^error: A fault needs a status, a delay_ms or drop: true\. \(422 missing_field, field status\)\n$/,
      );
    },
    SPAWNS,
  );
});

describe.concurrent('the command line: reset', () => {
  it(
    "removes the account's data with --yes, and keeps its keys",
    async () => {
      const key = await newAccountAt(sandbox.origin);
      await api('POST', '/v1/shipments', key, shipmentRequest());
      await api('POST', '/_sandbox/faults', key, { path: '/v1/rates', status: 500 });
      expect(json(await cli(key, ['reset', '--yes']))).toEqual({ reset: true });
      expect((await api('GET', '/v1/shipments', key)).body.data).toEqual([]);
      expect((await api('GET', '/_sandbox/faults', key)).body.data).toEqual([]);
      const readable = await cli(key, ['reset', '-y', '--pretty']);
      expect(readable.stdout).toMatch(/^Reset: the account's data is gone/);
    },
    SPAWNS,
  );

  it(
    'asks first on a terminal, and resets only on yes',
    async () => {
      const key = await newAccountAt(sandbox.origin);
      await api('POST', '/v1/shipments', key, shipmentRequest());
      const account = (await api('GET', '/_sandbox/account', key)).body;
      // `script` gives the command a terminal and types the answer into it.
      const onTerminal = (answer: string) =>
        new Promise<string>((resolve) => {
          const child = spawn('script', ['-qec', `${process.execPath} dist/main.js reset`, '/dev/null'], {
            env: { ...process.env, SHIPPING_SANDBOX_URL: sandbox.origin, SHIPPING_SANDBOX_KEY: key },
          });
          let output = '';
          child.stdout.on('data', (chunk) => {
            output += String(chunk);
            if (output.includes('[y/N]') && !output.includes('\u0000')) {
              output += '\u0000';
              child.stdin.write(`${answer}\n`);
            }
          });
          child.on('close', () => resolve(output.replace('\u0000', '')));
        });
      const declined = await onTerminal('n');
      expect(declined).toContain(`Reset account ${account.id} (${account.name})? It cannot be undone. [y/N]`);
      expect(declined).toContain('Nothing was reset.');
      expect((await api('GET', '/v1/shipments', key)).body.data).toHaveLength(1);
      const accepted = await onTerminal('y');
      expect(accepted).toContain("Reset: the account's data is gone");
      expect((await api('GET', '/v1/shipments', key)).body.data).toEqual([]);
    },
    SPAWNS,
  );
});
