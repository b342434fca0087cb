import { writeFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { JournaledRequest } from '../src/journal/journal.js';
import { toJUnit } from '../src/report/junit.js';
import {
  AccountObservations,
  ClientObservations,
  EVIDENCE_KEPT,
  noteLabelUrl,
  noteRequest,
  observationsFromJson,
  observationsToJson,
} from '../src/report/observations.js';
import { CHECK_IDS, type Report } from '../src/report/schema.js';
import { signedBy, startAnsweringReceiver } from './answering-receiver.js';
import {
  createTestSandbox,
  expectError,
  journaledRequest,
  serveSandbox,
  shipmentRequest,
  type TestSandbox,
} from './helpers.js';
import { elementsNamed, parseXml } from './xml.js';

const SECRET = 'whsec_report-0123456789';
/**
 * Short, so a slow receiver costs the test about a second; half of it (the limit) still leaves a receiver
 * that answers at once a wide margin on a loaded machine.
 */
const WEBHOOK_TIMEOUT_MS = 1500;
/** How long the careless receiver takes: past half the timeout, within the timeout. */
const SLOW_MS = 1000;

/** Checks the signature, answers at once: 401 to a forgery, 200 otherwise. */
const carefulReceiver = () =>
  startAnsweringReceiver((request) => ({ status: signedBy(SECRET, request) ? 200 : 401 }));

/** Checks nothing; its first answer is a 500, every later one a 200 that takes SLOW_MS. */
const carelessReceiver = () =>
  startAnsweringReceiver((_request, index) =>
    index === 0 ? { status: 500 } : { status: 200, delayMs: SLOW_MS },
  );

/** The sandbox in-process over `:memory:`, served on a real socket on a free loopback port. */
async function servedSandbox(overrides = {}) {
  const sandbox = await createTestSandbox({ webhookTimeoutMs: WEBHOOK_TIMEOUT_MS, ...overrides });
  return { sandbox, ...(await serveSandbox(sandbox)) };
}

interface Answer {
  status: number;
  headers: Headers;
  json: any;
  text: string;
}

/** A client of one account over HTTP: `key` is the key it calls with unless told otherwise. */
function clientOf(origin: string, key: string) {
  const send = async (
    method: string,
    pathOrUrl: string,
    options: { body?: unknown; key?: string | null } = {},
  ): Promise<Answer> => {
    const headers: Record<string, string> = {};
    const useKey = options.key === undefined ? key : options.key;
    if (useKey !== null) headers.authorization = `Bearer ${useKey}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(pathOrUrl.startsWith('http') ? pathOrUrl : `${origin}${pathOrUrl}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await response.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, json, text };
  };
  return {
    key,
    send,
    get: (path: string, options?: { key?: string | null }) => send('GET', path, options),
    post: (path: string, body?: unknown, options?: { key?: string | null }) =>
      send('POST', path, { ...options, body: body ?? {} }),
    advance: (by: string | number) => send('POST', '/_sandbox/clock/advance', { body: { by } }),
    report: async () => {
      const answer = await send('GET', '/_sandbox/report');
      expect(answer.status).toBe(200);
      return answer.json as Report;
    },
  };
}
type Client = ReturnType<typeof clientOf>;

const statuses = (report: Report) =>
  Object.fromEntries(report.checks.map((check) => [check.id, check.status]));
const check = (report: Report, id: string) => {
  const found = report.checks.find((each) => each.id === id);
  if (!found) throw new Error(`no check ${id}`);
  return found;
};

/** A new key of the client's account, made with its full key. */
async function newKey(client: Client, name: string): Promise<{ id: string; value: string }> {
  const made = await client.post('/_sandbox/keys', { name });
  expect(made.status).toBe(201);
  return { id: made.json.id, value: made.json.value };
}

/** Calls with `key` until the per-key ceiling (120 a minute) answers 429; returns that answer. */
async function exhaustKey(client: Client, key: string): Promise<Answer> {
  for (let i = 0; i < 200; i++) {
    const answer = await client.get('/v1/shipments?limit=1', { key });
    if (answer.status === 429) return answer;
    expect(answer.status).toBe(200);
  }
  throw new Error('no 429 after 200 requests');
}

describe('the integration report, a well-behaved client and a careless one against one sandbox', () => {
  let served: Awaited<ReturnType<typeof servedSandbox>>;
  let wall: TestSandbox['wall'];
  let careful: Client;
  let careless: Client;
  let fresh: Client;
  const receivers: { close(): Promise<void> }[] = [];
  let reports: { careful: Report; careless: Report; fresh: Report };

  beforeAll(async () => {
    served = await servedSandbox();
    wall = served.sandbox.wall;
    const account = async () => {
      const made = await fetch(`${served.origin}/_sandbox/accounts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      return clientOf(served.origin, ((await made.json()) as { api_key: string }).api_key);
    };
    careful = await account();
    careless = await account();
    fresh = await account();

    const goodHooks = await carefulReceiver();
    const badHooks = await carelessReceiver();
    receivers.push(goodHooks, badHooks);
    const events = ['shipment.created', 'tracking.updated'];
    for (const [client, receiver] of [
      [careful, goodHooks],
      [careless, badHooks],
    ] as const) {
      const hook = await client.post('/v1/webhooks', { url: receiver.url, events, secret: SECRET });
      expect(hook.status).toBe(201);
      // One POST /v1/shipments fails with an injected 503: whether it took effect is unknown to the client.
      const fault = await client.post('/_sandbox/faults', {
        method: 'POST',
        path: '/v1/shipments',
        status: 503,
        times: 1,
      });
      expect(fault.status).toBe(201);
    }

    // checks_before_retrying: the careful client looks for the shipment before sending it again.
    const order = shipmentRequest({ reference: 'order-2001' });
    expect((await careful.post('/v1/shipments', order)).status).toBe(503);
    expect((await careful.get('/v1/shipments?limit=5')).status).toBe(200);
    const carefulShipment = await careful.post('/v1/shipments', order);
    expect(carefulShipment.status).toBe(201);
    expect((await careless.post('/v1/shipments', order)).status).toBe(503);
    const carelessShipment = await careless.post('/v1/shipments', order);
    expect(carelessShipment.status).toBe(201);

    // does_not_repeat_rejected_requests: a shipment without its parcel is refused; only one client fixes it.
    const { parcel: _parcel, ...withoutParcel } = shipmentRequest({ reference: 'order-2002' });
    expectError(await careful.post('/v1/shipments', withoutParcel), 422, 'missing_field', 'parcel');
    expect((await careful.post('/v1/shipments', shipmentRequest({ reference: 'order-2002' }))).status).toBe(
      201,
    );
    expectError(await careless.post('/v1/shipments', withoutParcel), 422, 'missing_field', 'parcel');
    expectError(await careless.post('/v1/shipments', withoutParcel), 422, 'missing_field', 'parcel');

    // Labels, and (for the careful client) its file fetched through label_url while it is valid.
    const carefulLabel = (await careful.post('/v1/labels', { shipment_id: carefulShipment.json.id })).json;
    const carelessLabel = (await careless.post('/v1/labels', { shipment_id: carelessShipment.json.id })).json;
    expect((await careful.get(carefulLabel.label_url, { key: null })).status).toBe(200);

    // The deliveries so far: the careful receiver answers at once, the careless one 500 first.
    for (const client of [careful, careless]) expect((await client.advance(0)).status).toBe(200);
    // Six hours on: the parcels are accepted, and tracking.updated goes out (slowly, to the careless one).
    for (const client of [careful, careless]) expect((await client.advance('6h')).status).toBe(200);

    // relies_on_tracking_webhooks: one look at tracking against ten in a row.
    expect((await careful.get(`/v1/tracking/${carefulLabel.tracking_number}`)).status).toBe(200);
    for (let i = 0; i < 10; i++) {
      expect((await careless.get(`/v1/tracking/${carelessLabel.tracking_number}`)).status).toBe(200);
    }

    // verifies_signatures: both receivers are probed.
    for (const client of [careful, careless]) {
      const hooks = (await client.get('/v1/webhooks')).json.data;
      expect((await client.post(`/_sandbox/webhooks/${hooks[0].id}/probe`)).status).toBe(200);
    }

    // uses_valid_keys: both rotate a key; the careless client goes on using the revoked one.
    for (const client of [careful, careless]) {
      const rotated = await newKey(client, 'rotated');
      expect((await client.get('/v1/shipments', { key: rotated.value })).status).toBe(200);
      expect((await client.send('DELETE', `/_sandbox/keys/${rotated.id}`)).status).toBe(200);
      if (client === careless) {
        expectError(await client.get('/v1/shipments', { key: rotated.value }), 401, 'invalid_api_key');
      }
    }

    // respects_retry_after: a key of each runs into the per-key ceiling; the careless one calls again a
    // second later, the careful one once Retry-After has passed (the wall clock is moved, not slept on).
    const carefulBatch = await newKey(careful, 'batch');
    const carelessBatch = await newKey(careless, 'batch');
    const carefulRefusal = await exhaustKey(careful, carefulBatch.value);
    await exhaustKey(careless, carelessBatch.value);
    wall.now += 1000;
    expect((await careless.get('/v1/shipments?limit=1', { key: carelessBatch.value })).status).toBe(429);
    wall.now += Number(carefulRefusal.headers.get('retry-after')) * 1000;
    expect((await careful.get('/v1/shipments?limit=1', { key: carefulBatch.value })).status).toBe(200);

    // refreshes_label_urls: eight days on, the careless client fetches its old label_url; the careful
    // one downloads with its key.
    for (const client of [careful, careless]) expect((await client.advance('8d')).status).toBe(200);
    expectError(await careless.get(carelessLabel.label_url, { key: null }), 403, 'url_expired');
    expect((await careful.get(`/v1/labels/${carefulLabel.id}/download`)).status).toBe(200);

    reports = {
      careful: await careful.report(),
      careless: await careless.report(),
      fresh: await fresh.report(),
    };
    // REPORT_SAMPLE=<file> keeps this run's three reports, for the README's example of a real one.
    if (process.env.REPORT_SAMPLE) writeFileSync(process.env.REPORT_SAMPLE, JSON.stringify(reports, null, 2));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await served.close();
  });

  it('passes every check for the well-behaved client', () => {
    expect(statuses(reports.careful)).toEqual(Object.fromEntries(CHECK_IDS.map((id) => [id, 'pass'])));
    expect(reports.careful.status).toBe('pass');
  });

  it('fails every check for the careless client', () => {
    expect(statuses(reports.careless)).toEqual(Object.fromEntries(CHECK_IDS.map((id) => [id, 'fail'])));
    expect(reports.careless.status).toBe('fail');
  });

  it('observes nothing on a fresh account', () => {
    expect(statuses(reports.fresh)).toEqual(Object.fromEntries(CHECK_IDS.map((id) => [id, 'not_observed'])));
    expect(reports.fresh.status).toBe('not_observed');
    for (const each of reports.fresh.checks) expect(each.evidence).toEqual([]);
  });

  it('says in one line what happened and what to change, with evidence that links', async () => {
    for (const each of [...reports.careful.checks, ...reports.careless.checks]) {
      expect(each.summary, each.id).not.toMatch(/\n/);
      if (each.status === 'fail') expect(each.evidence, each.id).not.toEqual([]);
      expect(each.counts[each.status === 'fail' ? 'failed' : 'passed'], each.id).toBeGreaterThan(0);
    }
    const retry = check(reports.careless, 'respects_retry_after');
    expect(retry.summary).toMatch(/^Called again 1\.0 s after a 429 that asked to wait \d+ s/);
    expect(retry.summary).toMatch(/wait Retry-After seconds before retrying/);
    expect(retry.evidence.map((item) => item.kind)).toEqual(['request', 'request']);

    // Request ids are those of GET /_sandbox/requests, with both clocks.
    const journal = (await careless.get('/_sandbox/requests?limit=1000')).json.data as any[];
    for (const item of check(reports.careless, 'checks_before_retrying').evidence) {
      const entry = journal.find((request) => request.id === item.id);
      expect(entry, item.id).toMatchObject({
        method: 'POST',
        path: '/v1/shipments',
        at: item.at,
        wall_at: item.wall_at,
      });
    }
    const revoked = check(reports.careless, 'uses_valid_keys').evidence[0];
    expect(journal.find((request) => request.id === revoked?.id)).toMatchObject({
      status: 401,
      code: 'invalid_api_key',
      key_revoked: true,
    });

    // Delivery ids are those of the webhook's delivery log.
    const hook = (await careless.get('/v1/webhooks')).json.data[0];
    const log = (await careless.get(`/_sandbox/webhooks/${hook.id}/deliveries`)).json.data as any[];
    for (const id of ['webhook_handler_succeeds', 'webhook_handler_fast', 'verifies_signatures']) {
      for (const item of check(reports.careless, id).evidence) {
        expect(item).toMatchObject({ kind: 'delivery', webhook_id: hook.id });
        expect(
          log.map((attempt) => attempt.id),
          id,
        ).toContain(item.id);
        expect(item.wall_at, id).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      }
    }
    expect(check(reports.careless, 'verifies_signatures').evidence[0]).toMatchObject({
      probe_signature: 'forged',
      response_status: 200,
    });
    // A label's evidence names its shipment, so that a reader finds it without another read of the label.
    const late = check(reports.careless, 'refreshes_label_urls').evidence[0];
    expect(late).toMatchObject({ kind: 'label_url', shipment_id: expect.stringMatching(/^shp_/) });
    const found = await careless.get(`/_sandbox/shipments?q=${late?.shipment_id}`);
    expect(found.json.data.map((shipment: { label_id: string }) => shipment.label_id)).toEqual([late?.id]);
  });

  it('answers the same report as JUnit XML that CI systems read', async () => {
    const answer = await careless.send('GET', '/_sandbox/report?format=junit');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/xml/);
    const root = parseXml(answer.text);
    expect(root.name).toBe('testsuites');
    const [suite] = elementsNamed(root, 'testsuite');
    expect(suite?.attributes.name).toBe('shipping-sandbox integration report');
    expect(suite?.attributes).toMatchObject({
      tests: String(CHECK_IDS.length),
      failures: String(CHECK_IDS.length),
    });
    const cases = elementsNamed(root, 'testcase');
    expect(cases.map((testCase) => testCase.attributes.name)).toEqual([...CHECK_IDS]);
    const retry = cases.find((testCase) => testCase.attributes.name === 'respects_retry_after');
    const failure = retry?.children.find((child) => child.name === 'failure');
    expect(failure?.attributes.message).toBe(check(reports.careless, 'respects_retry_after').summary);
    expect(failure?.text).toContain(check(reports.careless, 'respects_retry_after').evidence[0]?.id);

    const skipped = parseXml((await fresh.send('GET', '/_sandbox/report?format=junit')).text);
    expect(elementsNamed(skipped, 'skipped')).toHaveLength(CHECK_IDS.length);
    expect(elementsNamed(skipped, 'failure')).toHaveLength(0);
    const passed = parseXml((await careful.send('GET', '/_sandbox/report?format=junit')).text);
    expect(elementsNamed(passed, 'failure')).toHaveLength(0);
    expect(elementsNamed(passed, 'system-out')).toHaveLength(CHECK_IDS.length);
  });

  it('refuses a format it does not know, and a key without shipments:read', async () => {
    expectError(await careful.get('/_sandbox/report?format=html'), 400, 'invalid_parameter', 'format');
    const writer = await careful.post('/_sandbox/keys', { name: 'writer', scopes: ['shipments:write'] });
    expectError(await careful.get('/_sandbox/report', { key: writer.json.value }), 403, 'insufficient_scope');
    const reader = await careful.post('/_sandbox/keys', { name: 'reader', scopes: ['shipments:read'] });
    expect((await careful.get('/_sandbox/report', { key: reader.json.value })).status).toBe(200);
  });
});

describe('the report and the probe', () => {
  const receivers: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  });
  const register = async (sandbox: TestSandbox, url: string) => {
    const made = await sandbox.call('POST', '/v1/webhooks', {
      body: { url, events: ['shipment.created'], secret: SECRET },
    });
    expect(made.status).toBe(201);
    return made.json.id as string;
  };

  it('counts probes toward verifies_signatures only, and shows nothing when the genuine one fails too', async () => {
    const sandbox = await createTestSandbox({ webhookTimeoutMs: WEBHOOK_TIMEOUT_MS });
    const receiver = await startAnsweringReceiver(() => ({ status: 500, delayMs: SLOW_MS }));
    receivers.push(receiver);
    const hook = await register(sandbox, receiver.url);
    for (let i = 0; i < 2; i++) {
      expect((await sandbox.call('POST', `/_sandbox/webhooks/${hook}/probe`)).json.verifies_signatures).toBe(
        false,
      );
    }
    const report = (await sandbox.call('GET', '/_sandbox/report')).json as Report;
    expect(statuses(report)).toMatchObject({
      verifies_signatures: 'not_observed',
      webhook_handler_succeeds: 'not_observed',
      webhook_handler_fast: 'not_observed',
    });
    expect(check(report, 'verifies_signatures').summary).toMatch(
      /^The last probe of wh_\S+ showed nothing: the genuine delivery got 500 too/,
    );
  });

  it('judges a receiver by its latest probe, once fixed', async () => {
    const sandbox = await createTestSandbox({ webhookTimeoutMs: WEBHOOK_TIMEOUT_MS });
    let checks = false;
    const receiver = await startAnsweringReceiver((request) => ({
      status: !checks || signedBy(SECRET, request) ? 200 : 401,
    }));
    receivers.push(receiver);
    const hook = await register(sandbox, receiver.url);
    expect((await sandbox.call('POST', `/_sandbox/webhooks/${hook}/probe`)).json.verifies_signatures).toBe(
      false,
    );
    expect(statuses((await sandbox.call('GET', '/_sandbox/report')).json).verifies_signatures).toBe('fail');
    checks = true;
    expect((await sandbox.call('POST', `/_sandbox/webhooks/${hook}/probe`)).json.verifies_signatures).toBe(
      true,
    );
    expect(statuses((await sandbox.call('GET', '/_sandbox/report')).json).verifies_signatures).toBe('pass');
  });
});

describe('what the report keeps of requests', () => {
  it('forgets what it observed of an account when the account is reset', async () => {
    const sandbox = await createTestSandbox();
    const account = await sandbox.newAccount();
    const { parcel: _parcel, ...withoutParcel } = shipmentRequest();
    for (let i = 0; i < 2; i++)
      await sandbox.call('POST', '/v1/shipments', { key: account, body: withoutParcel });
    const before = (await sandbox.call('GET', '/_sandbox/report', { key: account })).json as Report;
    expect(statuses(before).does_not_repeat_rejected_requests).toBe('fail');
    expect((await sandbox.call('POST', '/_sandbox/reset', { key: account })).status).toBe(200);
    const after = (await sandbox.call('GET', '/_sandbox/report', { key: account })).json as Report;
    expect(statuses(after)).toEqual(Object.fromEntries(CHECK_IDS.map((id) => [id, 'not_observed'])));
  });

  // 1,200 requests: over PostgreSQL, each a few round trips.
  it('keeps the first occurrences as evidence once the journal has moved on', {
    timeout: 40_000,
  }, async () => {
    const sandbox = await createTestSandbox();
    const account = await sandbox.newAccount('enterprise');
    await sandbox.call('POST', '/_sandbox/account', { key: account, body: { rate_limits: false } });
    await sandbox.call('POST', '/_sandbox/faults', {
      key: account,
      body: { method: 'POST', path: '/v1/shipments', status: 500 },
    });
    // 600 different POSTs, each left uncertain by a 500 and each sent again unchecked; ten at a time
    // (over PostgreSQL a request waits on round trips, which overlap).
    for (let from = 0; from < 600; from += 10) {
      await Promise.all(
        Array.from({ length: 10 }, async (_, n) => {
          const body = shipmentRequest({ reference: `order-${from + n}` });
          await sandbox.call('POST', '/v1/shipments', { key: account, body });
          await sandbox.call('POST', '/v1/shipments', { key: account, body });
        }),
      );
    }
    const report = (await sandbox.call('GET', '/_sandbox/report', { key: account })).json as Report;
    const retries = check(report, 'checks_before_retrying');
    expect(retries.counts.failed).toBe(600);
    expect(retries.evidence).toHaveLength(2 * EVIDENCE_KEPT);
    // The journal keeps its last 1,000 requests; the first occurrence is still the report's evidence.
    const journal = (await sandbox.call('GET', '/_sandbox/requests?limit=1000', { key: account })).json
      .data as any[];
    expect(journal).toHaveLength(1000);
    expect(journal.map((entry) => entry.id)).not.toContain(retries.evidence[0]?.id);
    expect(retries.summary).toContain(retries.evidence[1]?.id);
  });

  it('judges a retry that arrived in the millisecond its 429 was answered, not one already on its way', () => {
    const request = journaledRequests();
    const account = new AccountObservations();
    noteRequest(account, request({ status: 429, retryAfter: 1, wallAt: 10, answeredWallAt: 12 }));
    // Sent before the 429 was answered: not judged.
    noteRequest(account, request({ status: 429, retryAfter: 1, wallAt: 11, answeredWallAt: 13 }));
    expect(account.earlyAfter429.count).toBe(0);
    // Sent once it was, within the same millisecond over loopback: early.
    noteRequest(account, request({ status: 429, retryAfter: 1, wallAt: 13, answeredWallAt: 13 }));
    expect(account.earlyAfter429.count).toBe(1);
  });

  it('stays bounded per account whatever the client sends', () => {
    const observations = new ClientObservations(() => 0);
    const request = journaledRequests();
    for (let i = 0; i < 5000; i++) {
      const note = (overrides: Partial<JournaledRequest>) =>
        observations.noteRequest('acct_1', request(overrides));
      note({ keyId: `key_${i}`, status: 429, retryAfter: 60 });
      note({ method: 'POST', status: 503, bodySha256: `body-${i}` });
      note({
        method: 'POST',
        path: `/v1/webhooks/wh_${i}`,
        status: 422,
        code: 'invalid_field',
        bodySha256: 'x',
      });
      note({ path: `/v1/tracking/9400111${i}`, wallAt: i * 1000 });
      note({ keyRevoked: true, status: 401 });
      observations.noteLabelUrl({
        accountId: 'acct_1',
        labelId: `lbl_${i}`,
        shipmentId: `shp_${i}`,
        at: 2,
        expiresAt: 1,
        expired: true,
      });
    }
    const kept = observations.of('acct_1');
    expect(kept.pending429s.size).toBeLessThanOrEqual(100);
    expect(kept.uncertainPosts.size).toBeLessThanOrEqual(50);
    expect(kept.refusedRoutes.size).toBeLessThanOrEqual(50);
    expect(kept.recentPolls.size).toBeLessThanOrEqual(100);
    expect(kept.pollingBursts.length).toBeLessThanOrEqual(20);
    for (const tally of [kept.revokedKeyUses, kept.expiredLabelUrls]) {
      expect(tally.count).toBe(5000);
      expect(tally.kept).toHaveLength(EVIDENCE_KEPT);
    }
    expect(observations.of('acct_other').requests).toBe(0);
  });
});

/** Journaled requests for the observations alone, numbered in order; each field may be overridden. */
function journaledRequests() {
  let n = 0;
  return (overrides: Partial<JournaledRequest>): JournaledRequest => {
    n += 1;
    return journaledRequest({ id: `req_${n - 1}`, at: n, wallAt: n, answeredWallAt: n, ...overrides });
  };
}

describe("an account's observations as JSON (as replicas over PostgreSQL keep them)", () => {
  it('judge what follows the same after a round trip through JSON as without one', () => {
    const request = journaledRequests();
    const kept = new AccountObservations();
    let stored = new AccountObservations();
    for (let i = 0; i < 300; i++) {
      const wallAt = i * 1000;
      const notes = [
        request({
          keyId: `key_${i % 7}`,
          status: i % 3 === 0 ? 429 : 200,
          retryAfter: 2,
          wallAt,
          answeredWallAt: wallAt,
        }),
        request({ method: 'POST', status: i % 4 === 0 ? 503 : 201, bodySha256: `body-${i % 5}`, wallAt }),
        request({ method: 'GET', path: '/v1/shipments/shp_1', wallAt }),
        request({
          method: 'POST',
          path: '/v1/webhooks',
          status: 422,
          code: 'invalid_field',
          bodySha256: `${i % 2}`,
        }),
        request({ path: '/v1/tracking/9400111000', wallAt: i * 100 }),
        request({ keyRevoked: i % 50 === 0, status: 401 }),
      ];
      for (const note of notes) {
        noteRequest(kept, note);
        noteRequest(stored, note);
      }
      const label = {
        accountId: 'acct_1',
        labelId: `lbl_${i}`,
        shipmentId: `shp_${i}`,
        at: i,
        expiresAt: 150,
        expired: i >= 150,
        wallAt,
      };
      noteLabelUrl(kept, label);
      noteLabelUrl(stored, label);
      // Stored and read back now and then, as a fold does.
      if (i % 7 === 0) stored = observationsFromJson(JSON.parse(JSON.stringify(observationsToJson(stored))));
    }
    expect(kept.pending429s.size + kept.uncertainPosts.size + kept.refusedRoutes.size).toBeGreaterThan(0);
    expect(kept.earlyAfter429.count).toBeGreaterThan(0);
    expect(kept.checkedRetries.count + kept.blindRetries.count).toBeGreaterThan(0);
    expect(kept.burstCount).toBeGreaterThan(0);
    expect(observationsToJson(stored)).toEqual(observationsToJson(kept));
    expect(stored.pending429s).toBeInstanceOf(Map);
    expect(stored).toEqual(kept);
  });
});

describe('the JUnit form', () => {
  const hostile = `GET /v1/x/<a href="&amp;">'\u0001\u0000\uD800\uFFFE]]> ok`;
  const survives = `GET /v1/x/<a href="&amp;">'\uFFFD\uFFFD\uFFFD\uFFFD]]> ok`;
  const report = (status: 'pass' | 'fail' | 'not_observed') =>
    ({
      account_id: 'acct_1',
      generated_at: '2026-11-22T08:00:00Z',
      generated_wall_at: '2026-11-22T08:00:00Z',
      status,
      checks: CHECK_IDS.map((id) => ({
        id,
        title: 'A title',
        status,
        summary: hostile,
        counts: { passed: 0, failed: status === 'fail' ? 1 : 0 },
        evidence:
          status === 'not_observed'
            ? []
            : [
                {
                  kind: 'request' as const,
                  id: 'req_1',
                  at: null,
                  wall_at: null,
                  detail: `line one\nline two ${hostile}`,
                },
              ],
      })),
    }) satisfies Report;

  it("escapes the client's own bytes and replaces what XML cannot carry", () => {
    for (const status of ['pass', 'fail', 'not_observed'] as const) {
      const root = parseXml(toJUnit(report(status)));
      const cases = elementsNamed(root, 'testcase');
      expect(cases).toHaveLength(CHECK_IDS.length);
      for (const testCase of cases) {
        const [outcome] = testCase.children;
        if (status === 'pass') expect(outcome?.name).toBe('system-out');
        else expect(outcome?.attributes.message).toBe(survives);
        if (status !== 'not_observed') expect(outcome?.text).toContain(`line one\nline two ${survives}`);
      }
    }
  });

  it('is read by a reader that refuses what is not well formed', () => {
    for (const broken of [
      '<a>&</a>',
      '<a>&nbsp;</a>',
      '<a b="<"/>',
      '<a b="1" b="2"/>',
      '<a></b>',
      '<a>',
      '<a/><b/>',
      '<a>\u0001</a>',
      '<a>&#0;</a>',
      '<a b=1/>',
    ]) {
      expect(() => parseXml(broken), broken).toThrow();
    }
    expect(parseXml('<?xml version="1.0"?>\n<a b="&lt;&#10;"><c/>x &amp; y</a>\n')).toEqual({
      name: 'a',
      attributes: { b: '<\n' },
      children: [{ name: 'c', attributes: {}, children: [], text: '' }],
      text: 'x & y',
    });
  });
});
