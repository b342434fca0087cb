import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  formatAdvancedClock,
  formatAttempt,
  formatAttempts,
  formatClock,
  formatEmails,
  formatShipments,
  formatTracking,
} from '../src/cli/format.js';
import { Output, outputMode, table } from '../src/cli/output.js';
import { originOf } from '../src/cli/sandbox-api.js';
import { SETTINGS, testConfig } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { callSandbox, newAccountAt, type Run, runCli } from './cli-harness.js';
import { DEFAULT_KEY, shipmentRequest } from './helpers.js';
import { closedPortUrl, type Receiver, startReceiver } from './receiver.js';

/**
 * The control commands, each run as a child process (the built command, `dist/main.js`, as a person
 * runs it; `npm test` builds it first) against a real sandbox listening on a free port. Each test
 * works in an account of its own, so the tests run side by side.
 */

const SPAWNS = 90_000;
const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;

let sandbox: RunningSandbox;
let receiver: Receiver;
beforeAll(async () => {
  [sandbox, receiver] = await Promise.all([startServer(testConfig()), startReceiver([200])]);
});
afterAll(async () => {
  await Promise.all([sandbox.close(), receiver.close()]);
});

/** Runs the command with the sandbox's address in SHIPPING_SANDBOX_URL (a flag wins over it). */
const cli = (args: string[], env: Record<string, string> = {}): Promise<Run> =>
  runCli(sandbox.origin, args, env);

/** The JSON a piped command printed: one document. */
function json(run: Run): any {
  expect(run.stderr, 'nothing on stderr').not.toMatch(/error/i);
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout);
}

const api = (method: string, path: string, key: string | null, body?: unknown) =>
  callSandbox(sandbox.origin, method, path, key, body);
const newAccount = () => newAccountAt(sandbox.origin);

/** A shipment with a label: it has a tracking number and a scenario to play. */
async function shipmentWithLabel(key: string) {
  const shipment = await api('POST', '/v1/shipments', key, shipmentRequest({ carrier: 'usps' }));
  const label = await api('POST', '/v1/labels', key, { shipment_id: shipment.body.id });
  expect(label.status).toBe(201);
  return { id: shipment.body.id as string, trackingNumber: label.body.tracking_number as string };
}

async function webhookTo(key: string, url: string, events = ['tracking.delivered']) {
  const { status, body } = await api('POST', '/v1/webhooks', key, {
    url,
    events,
    secret: 'whsec_a-long-enough-secret',
  });
  expect(status).toBe(201);
  return body.id as string;
}

describe.concurrent('the command line: help and version', () => {
  it(
    'prints the package version',
    async () => {
      for (const flag of ['--version', '-v']) {
        const run = await cli([flag]);
        expect(run).toMatchObject({ code: 0, stdout: `${VERSION}\n` });
      }
    },
    SPAWNS,
  );

  it(
    'lists the commands in -h, and every serving flag and its variable in serve -h',
    async () => {
      const [help, serve] = await Promise.all([cli(['-h']), cli(['serve', '--help'])]);
      expect(help.code).toBe(0);
      for (const command of [
        'serve',
        'clock',
        'shipments',
        'scenarios',
        'trigger',
        'webhooks',
        'deliveries',
        'listen',
        'emails',
        'logs',
        'faults',
        'keys',
        'reset',
        'completion',
      ])
        expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
      expect(serve.code).toBe(0);
      for (const setting of Object.values(SETTINGS)) {
        expect(serve.stdout).toContain(`--${setting.flag}`);
        expect(serve.stdout).toMatch(new RegExp(`env:\\s+${setting.env}\\)`));
      }
    },
    SPAWNS,
  );

  it(
    "prints a command's own help with its connection flags and their variables",
    async () => {
      const run = await cli(['clock', 'advance', '-h']);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('Usage: shipping-sandbox clock advance [options] [duration]');
      expect(run.stdout).toContain('--to <instant>');
      expect(run.stdout).toMatch(/--url <url>[\s\S]*env:\s+SHIPPING_SANDBOX_URL/);
      expect(run.stdout).toMatch(/--key <key>[\s\S]*env:\s+SHIPPING_SANDBOX_KEY/);
    },
    SPAWNS,
  );
});

describe.concurrent('the command line: usage errors exit with 2 before calling the sandbox', () => {
  it.each([
    [['clock', 'advance', '5parsecs'], /invalid for argument 'duration'. Not a duration/],
    [['clock', 'advance'], /give a duration or --to <instant>/],
    [['clock', 'advance', '1h', '--to', '2030-01-01T00:00:00Z'], /give a duration or --to <instant>/],
    [['clock', 'speed', 'fast'], /Not a number greater than 0/],
    [['trigger', 'parcel.teleported'], /Allowed choices are shipment.created, /],
    [['shipments', 'advance', 'shp_1', 'lost_in_space'], /Allowed choices are pre_transit, /],
    [['deliveries'], /missing required argument 'webhook-id'/],
    [['clock', '--json', '--pretty'], /cannot be used with/],
    [['clock', '--url', 'not a url'], /'not a url' is not a URL/],
    [['clokc'], /unknown command 'clokc'\n\(Did you mean clock\?\)/],
    // Did you mean: commands, subcommands (a group's default one too), options, serving flags.
    [['clock', 'advnce', '2h'], /unknown command 'advnce' for 'clock'\n\(Did you mean advance\?\)/],
    [['shipments', 'lst'], /unknown command 'lst' for 'shipments'\n\(Did you mean list\?\)/],
    [['webhooks', 'delte', 'wh_1'], /unknown command 'delte' for 'webhooks'\n\(Did you mean delete\?\)/],
    [['accounts', 'creat'], /unknown command 'creat'\n\(Did you mean create\?\)/],
    [['logs', 'tial'], /unknown command 'tial'\n\(Did you mean tail\?\)/],
    [['shipments', '--limt', '3'], /unknown option '--limt'\n\(Did you mean --limit\?\)/],
    [['trigger', 'tracking.delivered', '--jsn'], /unknown option '--jsn'\n\(Did you mean --json\?\)/],
    [['--prot', '0'], /unknown option '--prot'\n\(Did you mean --port\?\)/],
    [['serve', '--memory', '--https-prt=0'], /unknown option '--https-prt'\n\(Did you mean --https-port\?\)/],
    // Bad input to the new commands, durations first.
    [
      ['faults', 'create', '/v1/rates', '--delay', 'soon'],
      /Not a duration: give a number of seconds, or a number with ms, s, m, h or d/,
    ],
    [['faults', 'create', '/v1/rates', '--delay', '2m'], /Not a duration from 0ms to 1m\./],
    [['faults', 'create', '/v1/rates', '--delay', '90'], /Not a duration from 0ms to 1m\./],
    [
      ['faults', 'create', '/v1/rates', '--retry-after', '1.5s'],
      /Not a duration from 0ms to 1d in whole seconds/,
    ],
    [['faults', 'create', '/v1/rates', '--status', '302'], /Not a status from 400 to 599/],
    [
      ['faults', 'create', '/v1/rates', '--method', 'FETCH'],
      /Allowed choices are GET, POST, PATCH, PUT, DELETE/,
    ],
    [['faults', 'delete'], /give a fault id or --all/],
    [['faults', 'delete', 'flt_1', '--all'], /give a fault id or --all/],
    [
      ['webhooks', 'create', 'https://shop.example.com/hooks', '--events', 'parcel.lost'],
      /Not an event: parcel.lost/,
    ],
    [['webhooks', 'create'], /missing required argument 'url'/],
    [['keys', 'create', 'CI', '--scopes', 'shipments:delete'], /Not a scope: shipments:delete/],
    [['keys', 'revoke'], /missing required argument 'key-id'/],
    [['reset'], /reset cannot be undone: add --yes/],
    [['logs', 'tail', '--status', '6xx'], /'6xx' is not a status/],
    [['logs', 'tail', '--method', 'FETCH'], /'FETCH' is not a method/],
    [['completion', 'tcsh'], /Allowed choices are bash, zsh, fish/],
  ])(
    '%j',
    async (args, message) => {
      // A URL nothing listens on: a usage error must not need the sandbox.
      const run = await cli(args, { SHIPPING_SANDBOX_URL: await closedPortUrl() });
      expect(run.stderr).toMatch(message);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
    },
    SPAWNS,
  );
});

describe.concurrent('the command line: the sandbox refuses (exit 1, its message)', () => {
  it(
    'a wrong key: the message on stderr, the error body on stdout for a script',
    async () => {
      const run = await cli(['clock', '--key', 'svc_test_not-a-key']);
      expect(run.code).toBe(1);
      expect(run.stderr).toBe('error: The API key is not valid. (401 invalid_api_key)\n');
      expect(JSON.parse(run.stdout)).toEqual({
        error: { code: 'invalid_api_key', message: 'The API key is not valid.' },
      });
    },
    SPAWNS,
  );

  it(
    'a missing shipment, and a duration the sandbox bounds (with the field to blame)',
    async () => {
      const key = await newAccount();
      const [missing, tooFar] = await Promise.all([
        cli(['shipments', 'advance', 'shp_01JD0000000000000000000000', 'delivered', '--pretty'], {
          SHIPPING_SANDBOX_KEY: key,
        }),
        cli(['clock', 'advance', '4000d', '--pretty'], { SHIPPING_SANDBOX_KEY: key }),
      ]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/^error: .*shp_01JD0000000000000000000000.* \(404 not_found\)\n$/);
      expect(missing.stdout).toBe('');
      expect(tooFar.code).toBe(1);
      expect(tooFar.stderr).toMatch(/^error: .*3650 days.* \(422 invalid_field, field by\)\n$/);
    },
    SPAWNS,
  );

  it(
    'no sandbox at the address: says so and how to point at one',
    async () => {
      const run = await cli(['clock', '--url', new URL(await closedPortUrl()).origin]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/cannot reach the sandbox at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
      expect(run.stderr).toContain('SHIPPING_SANDBOX_URL');
    },
    SPAWNS,
  );
});

describe.concurrent('the command line: controls', () => {
  it(
    'reads, freezes, advances (by a duration and to an instant), speeds up and unfreezes the clock',
    async () => {
      const key = await newAccount();
      const env = { SHIPPING_SANDBOX_KEY: key };
      const frozen = json(await cli(['clock', 'freeze'], env));
      expect(frozen).toMatchObject({ frozen: true, speed: 1 });
      expect(json(await cli(['clock'], env))).toEqual(frozen);

      const advanced = json(await cli(['clock', 'advance', '2h'], env));
      expect(Date.parse(advanced.now) - Date.parse(frozen.now)).toBe(2 * 3600_000);
      expect(advanced.ran).toEqual([]);
      const target = new Date(Date.parse(advanced.now) + 86_400_000).toISOString().replace('.000', '');
      expect(json(await cli(['clock', 'advance', '--to', target], env)).now).toBe(target);

      expect(json(await cli(['clock', 'speed', '60'], env))).toMatchObject({ speed: 60, frozen: true });
      const running = await cli(['clock', 'unfreeze', '--pretty'], env);
      expect(running.code).toBe(0);
      expect(running.stdout).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ {2}running at 60x real time\n$/);
    },
    SPAWNS,
  );

  it(
    'lists shipments, forces a tracking status and plays a scenario, flags instead of variables',
    async () => {
      const key = await newAccount();
      const { id, trackingNumber } = await shipmentWithLabel(key);
      const flags = ['--url', sandbox.origin, '--key', key];
      const env = { SHIPPING_SANDBOX_URL: 'http://127.0.0.1:1' };

      const list = json(await cli(['shipments', ...flags], env));
      expect(list.data.map((s: { id: string }) => s.id)).toEqual([id]);
      const table = await cli(['shipments', 'list', '--pretty', ...flags], env);
      expect(table.stdout).toMatch(
        new RegExp(`^${id} +label_generated +usps +\\S+ +${trackingNumber} `, 'm'),
      );

      const scenario = json(await cli(['shipments', 'scenario', id, 'exception_lost', ...flags], env));
      expect(scenario).toMatchObject({
        shipment_id: id,
        tracking_number: trackingNumber,
        scenario: 'exception_lost',
      });
      const delivered = json(await cli(['shipments', 'advance', id, 'delivered', ...flags], env));
      expect(delivered).toMatchObject({ tracking_number: trackingNumber, status: 'delivered' });
      expect((await api('GET', `/v1/shipments/${id}`, key)).body.status).toBe('delivered');
    },
    SPAWNS,
  );

  it(
    'lists the scenarios',
    async () => {
      const [piped, readable] = await Promise.all([cli(['scenarios']), cli(['scenarios', '--pretty'])]);
      const names = json(piped).data.map((s: { name: string }) => s.name);
      expect(names).toContain('standard');
      expect(names).toContain('exception_then_delivered');
      expect(readable.stdout).toMatch(/^NAME +STEPS +ENDS +DESCRIPTION\n/);
      expect(readable.stdout).toMatch(/^standard +\d+ +delivered +\S/m);
    },
    SPAWNS,
  );

  it(
    'triggers an event, lists webhooks, events and deliveries, and redelivers',
    async () => {
      const key = await newAccount();
      const env = { SHIPPING_SANDBOX_KEY: key };
      const webhook = await webhookTo(key, receiver.url);
      expect(json(await cli(['webhooks'], env)).data).toEqual([
        expect.objectContaining({ id: webhook, url: receiver.url, status: 'active' }),
      ]);

      const event = json(await cli(['trigger', 'tracking.delivered'], env));
      expect(event).toMatchObject({ event: 'tracking.delivered', id: expect.stringMatching(/^evt_/) });
      // The send is under way: an advance answers once sends on the wire have their outcome.
      await api('POST', '/_sandbox/clock/advance', key, { by: 1 });

      const events = json(await cli(['events', '--event', 'tracking.delivered'], env));
      expect(events.data.map((e: { id: string }) => e.id)).toEqual([event.id]);
      const deliveries = json(await cli(['deliveries', webhook], env));
      expect(deliveries.data).toEqual([
        expect.objectContaining({
          event_id: event.id,
          attempt: 0,
          status: 'succeeded',
          response_status: 200,
        }),
      ]);
      const again = json(await cli(['redeliver', deliveries.data[0].id], env));
      expect(again).toMatchObject({ event_id: event.id, attempt: 1, redelivery: true, status: 'succeeded' });

      const readable = await cli(['deliveries', webhook, '--pretty'], env);
      expect(readable.stdout).toMatch(/^ID +EVENT +EVENT ID +TRY +STATUS +ANSWER/);
      expect(readable.stdout).toContain(
        `${again.id}  tracking.delivered  ${event.id}  1 (redelivery)  succeeded`,
      );
    },
    SPAWNS,
  );

  it(
    'reads the e-mail outbox: the alert when a webhook is marked failed',
    async () => {
      const key = await newAccount();
      const env = { SHIPPING_SANDBOX_KEY: key };
      expect(json(await cli(['emails'], env))).toEqual({ data: [] });
      const failing = await startReceiver([500]);
      try {
        // No retries: the first failure marks the webhook failed.
        await api('POST', '/_sandbox/account', key, { webhook_retry_schedule: [] });
        const webhook = await webhookTo(key, failing.url);
        await api('POST', '/_sandbox/events/trigger', key, { event: 'tracking.delivered' });
        await api('POST', '/_sandbox/clock/advance', key, { by: 1 });
        const emails = json(await cli(['emails'], env));
        expect(emails.data).toEqual([
          expect.objectContaining({ subject: `Webhook ${webhook} was marked failed` }),
        ]);
        const readable = await cli(['emails', '--pretty'], env);
        expect(readable.stdout).toContain(`Webhook ${webhook} was marked failed\n`);
        expect(readable.stdout).toContain(`  Deliveries to ${failing.url} failed 1 times`);
      } finally {
        await failing.close();
      }
    },
    SPAWNS,
  );

  it(
    'creates an account whose key works, and prints how to use it',
    async () => {
      const created = json(await cli(['accounts', 'create', '--plan', 'starter', '--name', 'QA team']));
      expect(created).toMatchObject({
        name: 'QA team',
        plan: 'starter',
        api_key: expect.stringMatching(/^svc_test_/),
      });
      expect(json(await cli(['clock', '--key', created.api_key]))).toHaveProperty('now');
      const readable = await cli(['accounts', 'create', '--pretty']);
      expect(readable.stdout).toMatch(/^Created growth account acct_\S+ /);
      expect(readable.stdout).toMatch(/export SHIPPING_SANDBOX_KEY=svc_test_\S+\n/);
    },
    SPAWNS,
  );

  it(
    'creates accounts on a server with an admin token only with that token',
    async () => {
      const guarded = await startServer(testConfig({ adminToken: 'admin-token-of-the-team' }));
      try {
        const env = { SHIPPING_SANDBOX_URL: guarded.origin };
        const refused = await cli(['accounts', 'create'], env);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toMatch(/\(401 /);
        const created = json(
          await cli(['accounts', 'create'], { ...env, SANDBOX_ADMIN_TOKEN: 'admin-token-of-the-team' }),
        );
        expect(created.api_key).toMatch(/^svc_test_/);
      } finally {
        await guarded.close();
      }
    },
    SPAWNS,
  );
});

describe('the readable output', () => {
  const attempt = {
    id: 'dlv_01',
    webhook_id: 'wh_01',
    event_id: 'evt_01',
    event: 'tracking.delivered' as const,
    attempt: 2,
    redelivery: false,
    status: 'failed' as const,
    scheduled_at: '2026-11-22T08:00:00Z',
    sent_at: '2026-11-22T08:00:00Z',
    response_status: null,
    response_excerpt: null,
    duration_ms: 10_000,
    error: 'timeout' as const,
    error_message: 'no answer within 10 s',
    next_attempt_at: '2026-11-22T08:30:00Z',
    probe: false,
    probe_signature: null,
  };

  it('goes to a terminal; JSON goes everywhere else, unless --json or --pretty says', () => {
    expect(outputMode({}, true)).toBe('pretty');
    expect(outputMode({}, false)).toBe('json');
    expect(outputMode({ json: true }, true)).toBe('json');
    expect(outputMode({ pretty: true }, false)).toBe('pretty');
  });

  it('prints the JSON as the sandbox answered it, or its readable form', () => {
    const written: string[] = [];
    const answer = {
      status: 200,
      data: { now: 'x', speed: 1, frozen: true },
      text: '{"now":"x","speed":1,"frozen":true}',
    };
    new Output('json', { write: (t: string) => written.push(t) }).answer(answer, formatClock);
    new Output('pretty', { write: (t: string) => written.push(t) }).answer(answer, formatClock);
    expect(written).toEqual([`${answer.text}\n`, 'x  frozen\n']);
  });

  it('pads table columns to the widest cell, shows nothing as -, and says when there are no rows', () => {
    expect(
      table(
        ['A', 'LONGER'],
        [
          ['wide cell', null],
          ['b', 'c'],
        ],
      ),
    ).toBe('A          LONGER\nwide cell  -\nb          c\n');
    expect(table(['A'], [], 'Nothing here.')).toBe('Nothing here.\n');
  });

  it('shows a clock, and what an advance ran', () => {
    expect(formatClock({ now: '2026-11-22T08:00:00Z', speed: 3600, frozen: false })).toBe(
      '2026-11-22T08:00:00Z  running at 3600x real time\n',
    );
    const text = formatAdvancedClock({
      now: '2026-11-22T10:00:00Z',
      speed: 1,
      frozen: true,
      ran: [
        {
          kind: 'tracking.step',
          subject: 'lbl_1',
          due_at: '2026-11-22T09:00:00Z',
          status: 'in_transit',
          tracking_number: '9400',
        },
        {
          kind: 'webhook.attempt',
          subject: 'dlv_1',
          due_at: '2026-11-22T09:00:00Z',
          webhook_id: 'wh_1',
          event_id: 'evt_1',
          attempt: 0,
        },
        {
          kind: 'listener.attempt',
          subject: 'lda_1',
          due_at: '2026-11-22T09:00:00Z',
          listener_id: 'lsn_1',
          event_id: 'evt_1',
          attempt: 1,
        },
      ],
    });
    expect(text).toContain('Ran 3 items due on the way:\n');
    expect(text).toMatch(/2026-11-22T09:00:00Z +tracking\.step +lbl_1 +in_transit 9400\n/);
    expect(text).toMatch(/webhook\.attempt +dlv_1 +wh_1 evt_1 try 0\n/);
    expect(text).toMatch(/listener\.attempt +lda_1 +lsn_1 evt_1 try 1\n/);
  });

  it('shows deliveries with their answer or why there was none', () => {
    expect(formatAttempt(attempt)).toBe(
      '2026-11-22T08:00:00Z  tracking.delivered  evt_01  -> wh_01  try 2  failed  timeout  10000 ms  next try 2026-11-22T08:30:00Z  dlv_01\n',
    );
    expect(formatAttempts({ data: [attempt] })).toMatch(
      /^dlv_01 +tracking\.delivered +evt_01 +2 +failed +timeout +10000/m,
    );
    expect(formatAttempts({ data: [] })).toBe('No deliveries yet.\n');
  });

  it('shows shipments, tracking and e-mails', () => {
    expect(formatShipments({ data: [] })).toBe('No shipments yet.\n');
    const tracking = formatTracking({
      tracking_number: '9400',
      carrier: 'usps',
      status: 'delivered',
      estimated_delivery: '2026-11-25T17:00:00Z',
      events: [
        {
          status: 'delivered',
          description: 'Delivered',
          location: 'New York, NY, US',
          occurred_at: '2026-11-25T15:00:00Z',
        },
      ],
    });
    expect(tracking).toBe(
      '9400 (usps)  delivered, estimated delivery 2026-11-25T17:00:00Z\n' +
        '  WHEN                  STATUS     WHERE             WHAT\n' +
        '  2026-11-25T15:00:00Z  delivered  New York, NY, US  Delivered\n',
    );
    expect(
      formatEmails({
        data: [{ id: 'eml_1', to: 'a@b', subject: 'S', body: 'line 1\nline 2', created_at: 'T' }],
      }),
    ).toBe('T  to a@b\nS\n  line 1\n  line 2\n');
  });

  it("takes the banner's API URL as the sandbox address", () => {
    expect(originOf('http://127.0.0.1:4010/v1/')).toBe('http://127.0.0.1:4010');
    expect(originOf('https://sandbox.example.test')).toBe('https://sandbox.example.test');
    expect(() => originOf('ftp://x')).toThrow(/not an http or https URL/);
  });
});

describe('the default key', () => {
  it(
    "is the default account's: no --key at all acts on it",
    async () => {
      const before = await api('GET', '/_sandbox/clock', DEFAULT_KEY);
      const run = await cli(['clock']);
      expect(json(run).speed).toBe(before.body.speed);
    },
    SPAWNS,
  );
});
