import { verify } from '@octokit/webhooks-methods';
import { PNG } from 'pngjs';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestSandbox, expectError, type TestSandbox } from './helpers.js';
import { type Receiver, type Reply, startReceiver } from './receiver.js';

/** The sandbox routes the dashboard reads: each in its own module, documented, under the contract's scopes. */

const SECRET = 'whsec_0123456789abcdef';
const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

async function receiver(replies: Reply[] = [200]) {
  const started = await startReceiver(replies);
  receivers.push(started);
  return started;
}

async function frozen() {
  const sandbox = await createTestSandbox();
  await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
  return sandbox;
}

async function labelled(sandbox: TestSandbox, overrides: Record<string, unknown> = {}, format = 'pdf') {
  const shipment = await sandbox.newShipment(overrides);
  const label = await sandbox.call('POST', '/v1/labels', { body: { shipment_id: shipment.id, format } });
  expect(label.status).toBe(201);
  return { shipment, label: label.json as { id: string; tracking_number: string } };
}

async function keyWith(sandbox: TestSandbox, scopes: string[]) {
  const made = await sandbox.call('POST', '/_sandbox/keys', { body: { name: scopes.join(' '), scopes } });
  expect(made.status).toBe(201);
  return made.json.value as string;
}

const search = async (sandbox: TestSandbox, query: string) => {
  const response = await sandbox.call('GET', `/_sandbox/shipments${query}`);
  expect(response.status).toBe(200);
  return (response.json.data as { id: string }[]).map((shipment) => shipment.id);
};

describe('GET /_sandbox/shipments', () => {
  it('lists the newest first, and finds by id, tracking number or the start of a reference', async () => {
    const sandbox = await frozen();
    const first = await sandbox.newShipment({ reference: 'order-1001' });
    const second = await labelled(sandbox, { reference: 'order-1002' });
    const third = await sandbox.newShipment({ reference: 'return-7' });

    expect(await search(sandbox, '')).toEqual([third.id, second.shipment.id, first.id]);
    expect(await search(sandbox, `?q=${first.id}`)).toEqual([first.id]);
    expect(await search(sandbox, `?q=${second.label.tracking_number}`)).toEqual([second.shipment.id]);
    expect(await search(sandbox, '?q=order-')).toEqual([second.shipment.id, first.id]);
    expect(await search(sandbox, '?q=order-1001')).toEqual([first.id]);
    expect(await search(sandbox, '?q=%20return-7%20')).toEqual([third.id]);
    expect(await search(sandbox, '?q=ORDER-')).toEqual([]);
    expect(await search(sandbox, '?q=nothing-like-it')).toEqual([]);

    const full = (await sandbox.call('GET', `/_sandbox/shipments?q=${first.id}`)).json.data[0];
    expect(full).toEqual((await sandbox.call('GET', `/v1/shipments/${first.id}`)).json);
  });

  it('filters by status, with or without a search, and takes a limit', async () => {
    const sandbox = await frozen();
    const created = await sandbox.newShipment({ reference: 'a-1' });
    const withLabel = await labelled(sandbox, { reference: 'a-2' });
    expect(await search(sandbox, '?status=label_generated')).toEqual([withLabel.shipment.id]);
    expect(await search(sandbox, '?status=created&q=a-')).toEqual([created.id]);
    expect(await search(sandbox, '?limit=1')).toEqual([withLabel.shipment.id]);
  });

  it("never shows another account's shipments, even by their id", async () => {
    const sandbox = await frozen();
    const mine = await sandbox.newShipment({ reference: 'shared-ref' });
    const otherKey = await sandbox.newAccount();
    const theirs = await sandbox.newShipment({ reference: 'shared-ref' }, otherKey);
    expect(await search(sandbox, '?q=shared-ref')).toEqual([mine.id]);
    expect(await search(sandbox, `?q=${theirs.id}`)).toEqual([]);
  });

  it.each([
    ['?status=lost', 'status'],
    ['?limit=0', 'limit'],
    ['?limit=101', 'limit'],
    [`?q=${'x'.repeat(101)}`, 'q'],
    ['?q=a&q=b', 'q'],
  ])('answers 400 invalid_parameter to %s', async (query, field) => {
    const sandbox = await createTestSandbox();
    expectError(await sandbox.call('GET', `/_sandbox/shipments${query}`), 400, 'invalid_parameter', field);
  });
});

describe('GET /_sandbox/shipments/:id/tracking', () => {
  it("shows the parcel's record, its scenario's next steps, and the statuses it can be forced to", async () => {
    const sandbox = await frozen();
    const { shipment, label } = await labelled(sandbox);
    const parcel = await sandbox.call('GET', `/_sandbox/shipments/${shipment.id}/tracking`);
    expect(parcel.status).toBe(200);
    expect(parcel.json).toMatchObject({
      shipment_id: shipment.id,
      label_id: label.id,
      tracking_number: label.tracking_number,
      scenario: 'standard',
      tracking: (await sandbox.call('GET', `/v1/tracking/${label.tracking_number}`)).json,
    });
    const upcoming = parcel.json.upcoming as { status: string; due_at: string; location: string }[];
    expect(upcoming.length).toBeGreaterThan(2);
    expect(upcoming.map((step) => step.due_at)).toEqual(upcoming.map((step) => step.due_at).sort());
    expect(upcoming.at(-1)?.status).toBe('delivered');
    expect(parcel.json.can_advance_to).toEqual([
      'accepted',
      'in_transit',
      'out_for_delivery',
      'delivered',
      'exception',
      'returned',
    ]);

    // Each status it offers is one that advance takes.
    await sandbox.call('POST', `/_sandbox/shipments/${shipment.id}/advance`, {
      body: { status: 'out_for_delivery' },
    });
    const later = (await sandbox.call('GET', `/_sandbox/shipments/${shipment.id}/tracking`)).json;
    expect(later.tracking.status).toBe('out_for_delivery');
    expect(later.can_advance_to).toEqual(['delivered', 'exception', 'returned']);
    for (const status of ['accepted', 'in_transit', 'pre_transit']) {
      const refused = await sandbox.call('POST', `/_sandbox/shipments/${shipment.id}/advance`, {
        body: { status },
      });
      expectError(refused, 422, 'invalid_transition', 'status');
    }

    await sandbox.call('POST', `/_sandbox/shipments/${shipment.id}/advance`, {
      body: { status: 'delivered' },
    });
    const delivered = (await sandbox.call('GET', `/_sandbox/shipments/${shipment.id}/tracking`)).json;
    expect(delivered.tracking.events[0].status).toBe('delivered');
    expect([delivered.upcoming, delivered.can_advance_to]).toEqual([[], []]);
  });

  it('answers 422 no_active_label without a label, 404 for another account', async () => {
    const sandbox = await frozen();
    const bare = await sandbox.newShipment();
    expectError(await sandbox.call('GET', `/_sandbox/shipments/${bare.id}/tracking`), 422, 'no_active_label');
    const { shipment } = await labelled(sandbox);
    const otherKey = await sandbox.newAccount();
    expectError(
      await sandbox.call('GET', `/_sandbox/shipments/${shipment.id}/tracking`, { key: otherKey }),
      404,
      'not_found',
    );
  });
});

describe('GET /_sandbox/labels/:id/preview', () => {
  it.each(['pdf', 'zpl', 'png'])('draws a %s label as a PNG, voided or not', async (format) => {
    const sandbox = await frozen();
    const { label } = await labelled(sandbox, {}, format);
    expect((await sandbox.call('DELETE', `/v1/labels/${label.id}`)).status).toBe(200);
    const preview = await sandbox.call('GET', `/_sandbox/labels/${label.id}/preview`);
    expect(preview.status).toBe(200);
    expect(preview.headers.get('content-type')).toBe('image/png');
    const image = PNG.sync.read(Buffer.from(preview.bytes));
    expect(image.width).toBeGreaterThan(200);
    expect(image.height).toBeGreaterThan(image.width);
  });

  it("keeps the label's own file as it is", async () => {
    const sandbox = await frozen();
    const { label } = await labelled(sandbox);
    await sandbox.call('GET', `/_sandbox/labels/${label.id}/preview`);
    const file = await sandbox.call('GET', `/v1/labels/${label.id}/download`);
    expect(file.headers.get('content-type')).toBe('application/pdf');
    expect(Buffer.from(file.bytes.subarray(0, 5)).toString()).toBe('%PDF-');
  });

  it("answers 404 for another account's label", async () => {
    const sandbox = await frozen();
    const { label } = await labelled(sandbox);
    const otherKey = await sandbox.newAccount();
    expectError(
      await sandbox.call('GET', `/_sandbox/labels/${label.id}/preview`, { key: otherKey }),
      404,
      'not_found',
    );
  });
});

describe('GET /_sandbox/deliveries/:id', () => {
  it('shows the request exactly as the receiver got it, signature included, and the answer', async () => {
    const sandbox = await frozen();
    const hooks = await receiver([{ status: 202, body: 'queued' }]);
    const webhook = await sandbox.call('POST', '/v1/webhooks', {
      body: { url: hooks.url, events: ['shipment.created'], secret: SECRET },
    });
    const arrived = hooks.nextRequest();
    await sandbox.newShipment();
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: 1 } });
    const received = await arrived;
    const [listed] = (await sandbox.call('GET', `/_sandbox/webhooks/${webhook.json.id}/deliveries`)).json
      .data;

    const full = await sandbox.call('GET', `/_sandbox/deliveries/${listed.id}`);
    expect(full.status).toBe(200);
    const { request, ...attempt } = full.json;
    expect(attempt).toEqual(listed);
    expect(attempt).toMatchObject({ status: 'succeeded', response_status: 202, response_excerpt: 'queued' });
    expect(request.method).toBe('POST');
    expect(request.url).toBe(hooks.url);
    expect(request.body).toBe(received.body.toString('utf8'));
    for (const [name, value] of Object.entries(request.headers as Record<string, string>)) {
      expect([name, received.headers[name]]).toEqual([name, value]);
    }
    expect(Object.keys(request.headers)).toEqual(
      expect.arrayContaining(['service-signature', 'service-event-id', 'service-delivery-attempt']),
    );
    expect(await verify(SECRET, request.body, request.headers['service-signature'])).toBe(true);

    // A new secret later does not rewrite what was sent.
    await sandbox.call('PATCH', `/v1/webhooks/${webhook.json.id}`, {
      body: { secret: 'whsec_a-brand-new-secret' },
    });
    const again = (await sandbox.call('GET', `/_sandbox/deliveries/${listed.id}`)).json;
    expect(again.request).toEqual(request);
  });

  it('shows no request for an attempt not sent yet, and its next retry for one that failed', async () => {
    const sandbox = await frozen();
    const hooks = await receiver([500]);
    const webhook = await sandbox.call('POST', '/v1/webhooks', {
      body: { url: hooks.url, events: ['shipment.created'], secret: SECRET },
    });
    await sandbox.newShipment();
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: 1 } });
    const [retry, failed] = (await sandbox.call('GET', `/_sandbox/webhooks/${webhook.json.id}/deliveries`))
      .json.data;
    const failedInFull = (await sandbox.call('GET', `/_sandbox/deliveries/${failed.id}`)).json;
    expect(failedInFull).toMatchObject({
      status: 'failed',
      response_status: 500,
      error: 'http',
      next_attempt_at: retry.scheduled_at,
    });
    expect(failedInFull.request.headers['service-delivery-attempt']).toBe('0');
    const retryInFull = (await sandbox.call('GET', `/_sandbox/deliveries/${retry.id}`)).json;
    expect([retryInFull.status, retryInFull.request]).toEqual(['scheduled', null]);
  });

  it("answers 404 for another account's delivery, and keeps nothing after a reset", async () => {
    const sandbox = await frozen();
    const hooks = await receiver();
    const webhook = await sandbox.call('POST', '/v1/webhooks', {
      body: { url: hooks.url, events: ['shipment.created'], secret: SECRET },
    });
    await sandbox.newShipment();
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: 1 } });
    const [attempt] = (await sandbox.call('GET', `/_sandbox/webhooks/${webhook.json.id}/deliveries`)).json
      .data;
    const otherKey = await sandbox.newAccount();
    expectError(
      await sandbox.call('GET', `/_sandbox/deliveries/${attempt.id}`, { key: otherKey }),
      404,
      'not_found',
    );
    const count = () => sandbox.db.value('SELECT count(*) FROM webhook_requests');
    expect(await count()).toBe(1);
    await sandbox.call('POST', '/_sandbox/reset');
    expect(await count()).toBe(0);
  });
});

describe('GET /_sandbox/clock/due', () => {
  it('lists tracking steps and webhook retries, soonest first, with what each will do', async () => {
    const sandbox = await frozen();
    const hooks = await receiver([500]);
    const webhook = await sandbox.call('POST', '/v1/webhooks', {
      body: { url: hooks.url, events: ['shipment.created'], secret: SECRET },
    });
    const { label } = await labelled(sandbox);
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: 1 } });

    const due = (await sandbox.call('GET', '/_sandbox/clock/due?limit=100')).json.data as any[];
    expect(due.map((item) => item.due_at)).toEqual(due.map((item) => item.due_at).sort());
    const retry = due.find((item) => item.kind === 'webhook.attempt');
    expect(retry).toMatchObject({
      due_at: '2026-11-22T08:01:00Z',
      detail: { webhook_id: webhook.json.id, event: 'shipment.created', attempt: 1 },
    });
    const steps = due.filter((item) => item.kind === 'tracking.step');
    expect(steps.length).toBeGreaterThan(2);
    expect(steps[0]).toMatchObject({
      subject: label.id,
      detail: { label_id: label.id, scenario: 'standard', status: expect.any(String) },
    });
    expect(steps[0].detail.location).toEqual(expect.any(String));

    const two = (await sandbox.call('GET', '/_sandbox/clock/due?limit=2')).json.data;
    expect(two).toEqual(due.slice(0, 2));
    expectError(
      await sandbox.call('GET', '/_sandbox/clock/due?limit=101'),
      400,
      'invalid_parameter',
      'limit',
    );
  });

  it('is empty for an account with nothing due', async () => {
    const sandbox = await frozen();
    const otherKey = await sandbox.newAccount();
    await labelled(sandbox);
    expect((await sandbox.call('GET', '/_sandbox/clock/due', { key: otherKey })).json).toEqual({ data: [] });
  });
});

describe('the dashboard routes', () => {
  it('need shipments:read, and are in the OpenAPI document', async () => {
    const sandbox = await frozen();
    const { shipment, label } = await labelled(sandbox);
    const hooks = await receiver();
    const webhook = await sandbox.call('POST', '/v1/webhooks', {
      body: { url: hooks.url, events: ['shipment.created'], secret: SECRET },
    });
    await sandbox.newShipment();
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: 1 } });
    const [attempt] = (await sandbox.call('GET', `/_sandbox/webhooks/${webhook.json.id}/deliveries`)).json
      .data;
    const routes = [
      '/_sandbox/shipments?q=order',
      `/_sandbox/shipments/${shipment.id}/tracking`,
      `/_sandbox/labels/${label.id}/preview`,
      `/_sandbox/deliveries/${attempt.id}`,
      '/_sandbox/clock/due',
    ];
    const reader = await keyWith(sandbox, ['shipments:read']);
    const writer = await keyWith(sandbox, ['shipments:write', 'rates:read']);
    for (const path of routes) {
      expect([path, (await sandbox.call('GET', path, { key: reader })).status]).toEqual([path, 200]);
      const refused = expectError(
        await sandbox.call('GET', path, { key: writer }),
        403,
        'insufficient_scope',
      );
      expect(refused.message).toContain('shipments:read');
      expectError(await sandbox.call('GET', path, { key: null }), 401, 'missing_api_key');
    }

    const doc = (await sandbox.call('GET', '/openapi.json', { key: null })).json;
    for (const path of [
      '/_sandbox/shipments',
      '/_sandbox/shipments/{id}/tracking',
      '/_sandbox/labels/{id}/preview',
      '/_sandbox/deliveries/{id}',
      '/_sandbox/clock/due',
    ]) {
      expect([path, doc.paths[path]?.get?.security]).toEqual([path, [{ bearerAuth: [] }]]);
    }
  });
});
