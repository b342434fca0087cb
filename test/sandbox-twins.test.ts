import { describe, expect, it } from 'vitest';
import { createTestSandbox, expectError, shipmentRequest, type TestSandbox } from './helpers.js';

/**
 * The `/_sandbox` twins of the `/v1` routes the dashboard acts through: the same answers, errors and
 * events as the routes they twin, and no trace in what judges the merchant's client (the rate limits,
 * the request journal, the integration report, fault rules).
 */

const HOOK = {
  url: 'http://127.0.0.1:9/hooks',
  events: ['tracking.delivered'],
  secret: 'whsec_0123456789abcdef',
};

/** A fresh account of its own, on the starter plan (60 requests a minute), its clock frozen. */
async function account(sandbox: TestSandbox) {
  const key = await sandbox.newAccount('starter');
  await sandbox.call('POST', '/_sandbox/clock', { key, body: { frozen: true } });
  const call = (method: string, path: string, body?: unknown) => sandbox.call(method, path, { key, body });
  return { key, call };
}

/** Ids, times and URLs differ between two objects made alike; everything else must not. */
function withoutIds(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value)
      .replace(/"(shp|lbl|wh|evt)_[0-9A-Za-z]+"/g, '"<id>"')
      .replace(/"\d{4}-\d\d-\d\dT[\d:]+Z"/g, '"<time>"')
      .replace(/"[0-9A-Z]{12,}"/g, '"<number>"')
      .replace(/"http[^"]*\/cdn\/labels\/[^"]*"/g, '"<label url>"'),
  );
}

describe('the /_sandbox twins of /v1 routes', () => {
  it('answer what the /v1 routes answer, and raise the same events', async () => {
    const sandbox = await createTestSandbox();
    const api = await account(sandbox);
    const twin = await account(sandbox);
    const steps: [method: string, v1: string, sandboxPath: string, body?: unknown][] = [
      ['POST', '/v1/shipments', '/_sandbox/shipments', shipmentRequest()],
      ['POST', '/v1/rates', '/_sandbox/rates', shipmentRequest({ reference: undefined })],
      ['POST', '/v1/webhooks', '/_sandbox/webhooks', HOOK],
      ['GET', '/v1/webhooks', '/_sandbox/webhooks'],
    ];
    for (const [method, v1, sandboxPath, body] of steps) {
      const [fromApi, fromTwin] = [
        await api.call(method, v1, body),
        await twin.call(method, sandboxPath, body),
      ];
      expect([sandboxPath, fromTwin.status]).toEqual([sandboxPath, fromApi.status]);
      expect(withoutIds(fromTwin.json)).toEqual(withoutIds(fromApi.json));
    }

    // On each account's own shipment and webhook: a label, read, downloaded, voided; a cancel; a change.
    const own = async (who: typeof api, prefix: string) => {
      const shipment = (await who.call('GET', '/_sandbox/shipments')).json.data[0];
      const webhook = (await who.call('GET', '/_sandbox/webhooks')).json.data[0];
      const label = await who.call('POST', `${prefix}/labels`, { shipment_id: shipment.id, format: 'zpl' });
      const answers = [
        label,
        await who.call('GET', `${prefix}/labels/${label.json.id}`),
        await who.call('DELETE', `${prefix}/labels/${label.json.id}`),
        await who.call('DELETE', `${prefix}/shipments/${shipment.id}`),
        await who.call('PATCH', `${prefix}/webhooks/${webhook.id}`, { status: 'disabled' }),
      ];
      return answers.map((answer) => [answer.status, withoutIds(answer.json)]);
    };
    expect(await own(twin, '/_sandbox')).toEqual(await own(api, '/v1'));

    const events = async (who: typeof api) =>
      ((await who.call('GET', '/_sandbox/events?limit=100')).json.data as { event: string }[])
        .map((event) => event.event)
        .reverse();
    expect(await events(twin)).toEqual(await events(api));
    expect(await events(twin)).toEqual([
      'shipment.created',
      'label.generated',
      // The label's pre_transit scan.
      'tracking.updated',
      'label.voided',
      'shipment.cancelled',
    ]);
  });

  it('download the label file the /v1 route downloads', async () => {
    const sandbox = await createTestSandbox();
    const { call } = await account(sandbox);
    const shipment = (await call('POST', '/_sandbox/shipments', shipmentRequest())).json;
    const label = (await call('POST', '/_sandbox/labels', { shipment_id: shipment.id, format: 'pdf' })).json;
    const [fromApi, fromTwin] = [
      await call('GET', `/v1/labels/${label.id}/download`),
      await call('GET', `/_sandbox/labels/${label.id}/download`),
    ];
    expect(fromTwin.status).toBe(200);
    expect(fromTwin.headers.get('content-type')).toBe('application/pdf');
    expect(fromTwin.headers.get('content-disposition')).toBe(`attachment; filename="${label.id}.pdf"`);
    expect(Buffer.from(fromTwin.bytes).equals(Buffer.from(fromApi.bytes))).toBe(true);
  });

  it('leave no trace in the rate limits, the request journal, the integration report or the faults', async () => {
    const sandbox = await createTestSandbox();
    const { key, call } = await account(sandbox);
    // A fault on everything /v1 would break every twin, were faults applied to them.
    expect((await call('POST', '/_sandbox/faults', { path: '/v1/*', status: 503 })).status).toBe(201);
    const hook = await call('POST', '/_sandbox/webhooks', HOOK);
    expect(hook.status).toBe(201);
    // More than the starter plan's 60 requests a minute.
    for (let i = 0; i < 35; i++) {
      const shipment = await call('POST', '/_sandbox/shipments', shipmentRequest({ reference: `twin-${i}` }));
      expect(shipment.status).toBe(201);
      const label = await call('POST', '/_sandbox/labels', { shipment_id: shipment.json.id });
      expect(label.status).toBe(201);
    }
    const [first] = (await call('GET', '/_sandbox/shipments')).json.data;
    for (const [method, path, body] of [
      ['GET', `/_sandbox/labels/${first.label_id}`],
      ['GET', `/_sandbox/labels/${first.label_id}/download`],
      ['POST', '/_sandbox/rates', shipmentRequest({ reference: undefined })],
      ['GET', '/_sandbox/webhooks'],
      ['PATCH', `/_sandbox/webhooks/${hook.json.id}`, { status: 'active' }],
      ['DELETE', `/_sandbox/labels/${first.label_id}`],
      ['DELETE', `/_sandbox/shipments/${first.id}`],
    ] as const) {
      const answer = await call(method, path, body);
      expect([path, answer.status, answer.headers.get('x-ratelimit-limit')]).toEqual([path, 200, null]);
    }

    expect((await call('GET', '/_sandbox/requests')).json.data).toEqual([]);
    const report = (await call('GET', '/_sandbox/report')).json;
    for (const check of report.checks as { id: string; status: string; counts: object }[]) {
      expect([check.id, check.status, check.counts]).toEqual([
        check.id,
        'not_observed',
        { passed: 0, failed: 0 },
      ]);
    }
    // The account's first /v1 request of the minute finds the whole minute left (and its fault).
    expect((await call('DELETE', '/_sandbox/faults')).status).toBe(200);
    const listed = await sandbox.call('GET', '/v1/shipments', { key });
    expect(listed.status).toBe(200);
    expect(listed.headers.get('x-ratelimit-remaining')).toBe('59');
  });

  it('refuse what the /v1 routes refuse, with the same errors', async () => {
    const sandbox = await createTestSandbox();
    const { call } = await account(sandbox);
    const { parcel: _parcel, ...withoutParcel } = shipmentRequest();
    expectError(await call('POST', '/_sandbox/shipments', withoutParcel), 422, 'missing_field', 'parcel');
    expectError(await call('POST', '/_sandbox/shipments', '[1]'), 400, 'invalid_json');
    expectError(await call('POST', '/_sandbox/rates', {}), 422, 'missing_field', 'from');
    expectError(
      await call('POST', '/_sandbox/webhooks', { ...HOOK, secret: 'short' }),
      422,
      'invalid_field',
      'secret',
    );
    expectError(await call('GET', '/_sandbox/labels/lbl_01JD0000000000000000000000'), 404, 'not_found');
    expectError(await call('DELETE', '/_sandbox/shipments/shp_01JD0000000000000000000000'), 404, 'not_found');
    expectError(
      await call('POST', '/_sandbox/labels', { shipment_id: 'shp_01JD0000000000000000000000' }),
      404,
      'not_found',
    );

    // A scanned label is not voided, and a shipment on its way is not cancelled.
    const shipment = (await call('POST', '/_sandbox/shipments', shipmentRequest())).json;
    const label = (await call('POST', '/_sandbox/labels', { shipment_id: shipment.id })).json;
    expect(
      (await call('POST', `/_sandbox/shipments/${shipment.id}/advance`, { status: 'accepted' })).status,
    ).toBe(200);
    expectError(await call('DELETE', `/_sandbox/labels/${label.id}`), 422, 'label_already_scanned');
    expectError(await call('DELETE', `/_sandbox/shipments/${shipment.id}`), 422, 'shipment_not_cancellable');
    // Another account's label is not found; no key is no access.
    const stranger = await account(sandbox);
    expectError(await stranger.call('GET', `/_sandbox/labels/${label.id}`), 404, 'not_found');
    expectError(await sandbox.call('GET', '/_sandbox/webhooks', { key: null }), 401, 'missing_api_key');
  });
});

describe("the /v1 routes under /_sandbox/try, for the API reference's “Try it out”", () => {
  it('give the answers /v1 gives, route by route', async () => {
    const sandbox = await createTestSandbox();
    const run = async (prefix: string) => {
      const { call } = await account(sandbox);
      const shipment = await call('POST', `${prefix}/shipments`, shipmentRequest());
      const label = await call('POST', `${prefix}/labels`, { shipment_id: shipment.json.id, format: 'zpl' });
      const answers = [
        shipment,
        label,
        await call('POST', `${prefix}/rates`, shipmentRequest({ reference: undefined })),
        await call('GET', `${prefix}/shipments/${shipment.json.id}`),
        await call('GET', `${prefix}/labels/${label.json.id}`),
        await call('GET', `${prefix}/tracking/${label.json.tracking_number}`),
        await call('POST', `${prefix}/webhooks`, HOOK),
        await call('GET', `${prefix}/webhooks`),
        await call('DELETE', `${prefix}/labels/${label.json.id}`),
        await call('DELETE', `${prefix}/shipments/${shipment.json.id}`),
        await call('GET', `${prefix}/shipments?limit=1`),
        await call('GET', `${prefix}/tracking/1Z0000000000000000`),
      ];
      const download = await call('GET', `${prefix}/labels/${label.json.id}/download`);
      // A tracking event's wording is drawn for its tracking number, which differs.
      const worded = (json: unknown) =>
        JSON.parse(JSON.stringify(json).replace(/"description":"[^"]*"/g, '"description":"<words>"'));
      return [
        ...answers.map((answer) => [answer.status, withoutIds(worded(answer.json))]),
        [download.status, download.headers.get('content-type'), download.bytes.byteLength > 0],
      ];
    };
    expect(await run('/_sandbox/try/v1')).toEqual(await run('/v1'));
  });

  it('answer what /v1 answers, behind the same key and scopes, and leave no trace', async () => {
    const sandbox = await createTestSandbox();
    const { key, call } = await account(sandbox);
    expect((await call('POST', '/_sandbox/faults', { path: '/v1/*', status: 503 })).status).toBe(201);
    // More than the starter plan's 60 requests a minute, all answered.
    for (let i = 0; i < 61; i++) {
      const created = await call(
        'POST',
        '/_sandbox/try/v1/shipments',
        shipmentRequest({ reference: `try-${i}` }),
      );
      expect([i, created.status, created.headers.get('x-ratelimit-limit')]).toEqual([i, 201, null]);
    }
    const listed = await call('GET', '/_sandbox/try/v1/shipments?limit=2');
    expect(listed.status).toBe(200);
    expect(listed.json.data.map((shipment: { reference: string }) => shipment.reference)).toEqual([
      'try-60',
      'try-59',
    ]);
    const { id } = listed.json.data[0];
    expect(withoutIds((await call('GET', `/_sandbox/try/v1/shipments/${id}`)).json)).toEqual(
      withoutIds(listed.json.data[0]),
    );

    const { parcel: _parcel, ...withoutParcel } = shipmentRequest();
    expectError(
      await call('POST', '/_sandbox/try/v1/shipments', withoutParcel),
      422,
      'missing_field',
      'parcel',
    );
    expectError(await call('PUT', '/_sandbox/try/v1/shipments'), 405, 'method_not_allowed');
    expectError(
      await sandbox.call('GET', '/_sandbox/try/v1/shipments', { key: null }),
      401,
      'missing_api_key',
    );
    const reader = await call('POST', '/_sandbox/keys', { name: 'reader', scopes: ['shipments:read'] });
    expect(reader.status).toBe(201);
    const asReader = (method: string, path: string, body?: unknown) =>
      sandbox.call(method, path, { key: reader.json.value, body });
    expect((await asReader('GET', '/_sandbox/try/v1/shipments')).status).toBe(200);
    expectError(
      await asReader('POST', '/_sandbox/try/v1/shipments', shipmentRequest()),
      403,
      'insufficient_scope',
    );

    expect((await call('GET', '/_sandbox/requests')).json.data).toEqual([]);
    const report = (await call('GET', '/_sandbox/report')).json;
    for (const check of report.checks as { id: string; status: string }[])
      expect([check.id, check.status]).toEqual([check.id, 'not_observed']);
    // The account's first /v1 request of the minute finds its fault, and the whole minute left.
    expectError(await sandbox.call('GET', '/v1/shipments', { key }), 503, 'service_unavailable');
    expect((await call('DELETE', '/_sandbox/faults')).status).toBe(200);
    const fromApi = await sandbox.call('GET', '/v1/shipments', { key });
    expect([fromApi.status, fromApi.headers.get('x-ratelimit-remaining')]).toEqual([200, '58']);

    const document = (await sandbox.call('GET', '/openapi.json', { key: null })).json;
    expect(Object.keys(document.paths).filter((path) => path.includes('/try'))).toEqual([]);
  });
});
