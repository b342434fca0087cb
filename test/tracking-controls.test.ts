import { describe, expect, it } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { DAY, formatTimestamp, HOUR } from '../src/core/time.js';
import { loadScenarios, scenarioDirectories } from '../src/scenarios/files.js';
import type { TrackingStatus } from '../src/scenarios/vocabulary.js';

import { MAGIC_TRACKING_NUMBERS, magicTimeline } from '../src/tracking/magic-numbers.js';
import { planTimeline, type TimelineStep } from '../src/tracking/timeline.js';
import { createTestSandbox, DEFAULT_KEY, expectError, shipmentRequest, type TestSandbox } from './helpers.js';

const T0 = Date.UTC(2026, 10, 22, 8, 0, 0);
const NOW = formatTimestamp(T0);
const SCENARIOS = loadScenarios(scenarioDirectories(undefined));
const LOCATION = /^[^,]+(, [A-Z]{2,3})?, [A-Z]{2}$/;

type Call = TestSandbox['call'];

interface TrackingEvent {
  status: TrackingStatus;
  description: string;
  location: string;
  occurred_at: string;
}

interface Tracking {
  tracking_number: string;
  carrier: string;
  status: TrackingStatus;
  estimated_delivery: string;
  events: TrackingEvent[];
}

async function frozenSandbox() {
  const sandbox = await createTestSandbox();
  expect((await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } })).status).toBe(200);
  return sandbox;
}

/** A labelled shipment and the timeline its label was planned with, from `startedAt`. */
async function labelled(call: Call, key: string = DEFAULT_KEY) {
  const created = await call('POST', '/v1/shipments', { key, body: shipmentRequest() });
  expect(created.status).toBe(201);
  const response = await call('POST', '/v1/labels', {
    key,
    body: { shipment_id: created.json.id, format: 'zpl' },
  });
  expect(response.status).toBe(201);
  const label = response.json as { id: string; tracking_number: string; carrier: string; created_at: string };
  const shipment = (await call('GET', `/v1/shipments/${created.json.id}`, { key })).json;
  const plan = (scenario: string, startedAt: number) =>
    planTimeline(
      {
        seed: testConfig().seed,
        labelId: label.id,
        carrier: label.carrier,
        from: shipment.from,
        to: shipment.to,
        startedAt,
      },
      SCENARIOS.get(scenario)!,
    );
  return { shipment: shipment as { id: string }, label, plan };
}

const asEvent = (step: TimelineStep, at = step.occurredAt): TrackingEvent => ({
  status: step.status,
  description: step.description,
  location: step.location,
  occurred_at: formatTimestamp(at),
});

async function track(call: Call, number: string, key?: string): Promise<Tracking> {
  const response = await call('GET', `/v1/tracking/${number}`, { key });
  expect(response.status).toBe(200);
  return response.json;
}

async function events(call: Call, type: string, key?: string) {
  const response = await call('GET', `/_sandbox/events?event=${type}`, { key });
  expect(response.status).toBe(200);
  return response.json.data as { id: string; event: string; created_at: string; data: any }[];
}

async function advanceClock(call: Call, by: string) {
  const response = await call('POST', '/_sandbox/clock/advance', { body: { by } });
  expect(response.status).toBe(200);
  return response.json.ran as { subject: string; due_at: string; status?: string }[];
}

const statuses = (tracking: Tracking) => tracking.events.map((event) => event.status);

/** Each control works on a shipment id and on a tracking number alike. */
const WAYS = [
  ['shipment id', (s: { id: string }, _l: { tracking_number: string }) => `/_sandbox/shipments/${s.id}`],
  [
    'tracking number',
    (_s: { id: string }, l: { tracking_number: string }) => `/_sandbox/tracking/${l.tracking_number}`,
  ],
] as const;

describe.each(WAYS)('the tracking controls by %s', (_way, base) => {
  it('advances to delivered through accepted, in_transit and out_for_delivery, at once', async () => {
    const { call } = await frozenSandbox();
    const { shipment, label, plan } = await labelled(call);
    const standard = plan('standard', T0);

    const response = await call('POST', `${base(shipment, label)}/advance`, {
      body: { status: 'delivered' },
    });
    expect(response.status).toBe(200);
    const tracking = response.json as Tracking;
    expect(tracking).toEqual({
      tracking_number: label.tracking_number,
      carrier: label.carrier,
      status: 'delivered',
      // Delivered: the estimate is the delivery, not the date the scenario had planned.
      estimated_delivery: NOW,
      // The scenario's own steps, all played now.
      events: [asEvent(standard[0]!), ...standard.slice(1).map((step) => asEvent(step, T0))].reverse(),
    });
    expect(statuses(tracking)).toEqual([
      'delivered',
      'out_for_delivery',
      'in_transit',
      'in_transit',
      'in_transit',
      'in_transit',
      'in_transit',
      'accepted',
      'pre_transit',
    ]);
    expect(await track(call, label.tracking_number)).toEqual(tracking);

    const updates = await events(call, 'tracking.updated');
    expect(updates).toHaveLength(standard.length);
    expect(updates.map((event) => event.data.status)).toEqual(statuses(tracking));
    expect(updates[0]?.data).toEqual(tracking);
    const delivered = await events(call, 'tracking.delivered');
    expect(delivered.map((event) => event.data)).toEqual([
      {
        tracking_number: label.tracking_number,
        carrier: label.carrier,
        status: 'delivered',
        delivered_at: NOW,
      },
    ]);
    expect((await call('GET', `/v1/shipments/${shipment.id}`)).json.status).toBe('delivered');
    expectError(await call('DELETE', `/v1/labels/${label.id}`), 422, 'label_already_scanned');

    // Delivered is the end: nothing of the scenario is left to run.
    expect(await advanceClock(call, '10d')).toEqual([]);
    expect(await events(call, 'tracking.updated')).toHaveLength(standard.length);
  });

  it('advances part of the way and lets the rest of the scenario run on its own time', async () => {
    const { call } = await frozenSandbox();
    const { shipment, label, plan } = await labelled(call);
    const standard = plan('standard', T0);
    const response = await call('POST', `${base(shipment, label)}/advance`, {
      body: { status: 'in_transit' },
    });
    expect(statuses(response.json)).toEqual(['in_transit', 'accepted', 'pre_transit']);
    expect(response.json.events.map((event: TrackingEvent) => event.occurred_at)).toEqual([NOW, NOW, NOW]);
    expect((await call('GET', `/v1/shipments/${shipment.id}`)).json.status).toBe('in_transit');

    const ran = await advanceClock(call, '4d');
    expect(ran.map((job) => [job.status, job.due_at])).toEqual(
      standard.slice(3).map((step) => [step.status, formatTimestamp(step.occurredAt)]),
    );
    expect(statuses(await track(call, label.tracking_number))).toHaveLength(standard.length);
  });

  it('makes up the steps when the scenario does not lead there, and stops the scenario', async () => {
    const { call } = await frozenSandbox();
    const { shipment, label } = await labelled(call);
    const path = base(shipment, label);
    expect((await call('POST', `${path}/scenario`, { body: { name: 'stuck_pre_transit' } })).status).toBe(
      200,
    );

    const response = await call('POST', `${path}/advance`, { body: { status: 'delivered' } });
    expect(response.status).toBe(200);
    expect(statuses(response.json)).toEqual([
      'delivered',
      'out_for_delivery',
      'in_transit',
      'accepted',
      'pre_transit',
    ]);
    for (const event of response.json.events as TrackingEvent[]) {
      expect(event.occurred_at).toBe(NOW);
      expect(event.location).toMatch(LOCATION);
      expect(event.description).not.toBe('');
    }
    expect(await events(call, 'tracking.updated')).toHaveLength(5);
    expect(await events(call, 'tracking.delivered')).toHaveLength(1);
    // The stuck scenario's own later pre_transit step was dropped.
    expect(await advanceClock(call, '5d')).toEqual([]);
    expect((await track(call, label.tracking_number)).status).toBe('delivered');
  });

  it('advances to an exception, which stops the scenario, then on to delivered', async () => {
    const { call } = await frozenSandbox();
    const { shipment, label } = await labelled(call);
    const path = base(shipment, label);

    const exception = await call('POST', `${path}/advance`, { body: { status: 'exception' } });
    expect(exception.status).toBe(200);
    expect(statuses(exception.json)).toEqual(['exception', 'pre_transit']);
    const raised = await events(call, 'tracking.exception');
    expect(raised).toHaveLength(1);
    expect(raised[0]).toMatchObject({ created_at: NOW, data: exception.json });
    expect((await call('GET', `/v1/shipments/${shipment.id}`)).json.status).toBe('in_transit');
    expect(await advanceClock(call, '5d')).toEqual([]);

    const delivered = await call('POST', `${path}/advance`, { body: { status: 'delivered' } });
    expect(delivered.status).toBe(200);
    expect(statuses(delivered.json)).toEqual(['delivered', 'out_for_delivery', 'exception', 'pre_transit']);
    const at = formatTimestamp(T0 + 5 * DAY);
    expect(delivered.json.events.slice(0, 2).map((event: TrackingEvent) => event.occurred_at)).toEqual([
      at,
      at,
    ]);
    expect((await events(call, 'tracking.delivered'))[0]?.data.delivered_at).toBe(at);
    expect(delivered.json.estimated_delivery).toBe(at);
    expect(await events(call, 'tracking.exception')).toHaveLength(1);
    expect((await call('GET', `/v1/shipments/${shipment.id}`)).json.status).toBe('delivered');
  });

  it('forces an exception where the parcel is, worded for what it has been through', async () => {
    const { call } = await frozenSandbox();
    // Not picked up yet: the driver missed it at the sender's; no delivery was attempted anywhere.
    const waiting = await labelled(call);
    const sender = (await track(call, waiting.label.tracking_number)).events[0]!;
    const missed = await call('POST', `${base(waiting.shipment, waiting.label)}/advance`, {
      body: { status: 'exception' },
    });
    expect(missed.status).toBe(200);
    const pickup = (missed.json as Tracking).events[0]!;
    expect(pickup).toMatchObject({ status: 'exception', location: sender.location });
    expect(pickup.description).toMatch(/pick ?up/i);
    expect(pickup.description).not.toMatch(/notice|deliver|receiver/i);

    // Out for delivery: the attempt failed at the door, in the recipient's city.
    const going = await labelled(call);
    const path = base(going.shipment, going.label);
    const out = await call('POST', `${path}/advance`, { body: { status: 'out_for_delivery' } });
    const door = (out.json as Tracking).events[0]!;
    const attempt = (await call('POST', `${path}/advance`, { body: { status: 'exception' } }))
      .json as Tracking;
    expect(attempt.events[0]).toMatchObject({ status: 'exception', location: door.location });
    expect(attempt.events[0]?.description).not.toMatch(/pick ?up/i);
  });

  it('advances to returned through an exception; a returned parcel goes no further', async () => {
    const { call } = await frozenSandbox();
    const { shipment, label } = await labelled(call);
    const path = base(shipment, label);
    const returned = await call('POST', `${path}/advance`, { body: { status: 'returned' } });
    expect(returned.status).toBe(200);
    expect(statuses(returned.json)).toEqual(['returned', 'exception', 'pre_transit']);
    expect((await call('GET', `/v1/shipments/${shipment.id}`)).json.status).toBe('in_transit');
    expect(await events(call, 'tracking.exception')).toHaveLength(1);
    expect(await events(call, 'tracking.delivered')).toEqual([]);
    expect(await advanceClock(call, '10d')).toEqual([]);

    for (const status of ['delivered', 'returned', 'in_transit']) {
      expectError(
        await call('POST', `${path}/advance`, { body: { status } }),
        422,
        'invalid_transition',
        'status',
      );
    }
    expect(statuses(await track(call, label.tracking_number))).toEqual([
      'returned',
      'exception',
      'pre_transit',
    ]);
  });

  it('refuses a status the parcel has already passed, and changes nothing', async () => {
    const { call } = await frozenSandbox();
    const { shipment, label } = await labelled(call);
    const path = base(shipment, label);
    expectError(
      await call('POST', `${path}/advance`, { body: { status: 'pre_transit' } }),
      422,
      'invalid_transition',
      'status',
    );
    await call('POST', `${path}/advance`, { body: { status: 'out_for_delivery' } });
    for (const status of ['pre_transit', 'accepted', 'in_transit']) {
      expectError(
        await call('POST', `${path}/advance`, { body: { status } }),
        422,
        'invalid_transition',
        'status',
      );
    }
    const tracking = await track(call, label.tracking_number);
    expect(tracking.status).toBe('out_for_delivery');
    expect(await events(call, 'tracking.updated')).toHaveLength(tracking.events.length);
  });

  it('starts another scenario from now and drops the pending steps of the old one', async () => {
    const { call } = await frozenSandbox();
    const { shipment, label, plan } = await labelled(call);
    const standard = plan('standard', T0);
    await advanceClock(call, '6h');
    expect(statuses(await track(call, label.tracking_number))).toEqual(['accepted', 'pre_transit']);

    const response = await call('POST', `${base(shipment, label)}/scenario`, { body: { name: 'express' } });
    expect(response.status).toBe(200);
    // The parcel already has its pre_transit event: the new scenario goes on from its second step.
    const express = plan('express', T0 + 6 * HOUR).slice(1);
    expect(response.json).toEqual({
      shipment_id: shipment.id,
      tracking_number: label.tracking_number,
      scenario: 'express',
      steps: express.map((step) => asEvent(step)),
    });

    const ran = await advanceClock(call, '4d');
    expect(ran.map((job) => [job.status, job.due_at])).toEqual(
      express.map((step) => [step.status, formatTimestamp(step.occurredAt)]),
    );
    const tracking = await track(call, label.tracking_number);
    expect(tracking.events).toEqual(
      [...standard.slice(0, 2), ...express].map((step) => asEvent(step)).reverse(),
    );
    expect(tracking.estimated_delivery).toBe(formatTimestamp(express.at(-1)!.occurredAt));
    expect(await events(call, 'tracking.updated')).toHaveLength(2 + express.length);
  });

  it.each(['delivered', 'returned'])('plays no scenario on a parcel already %s', async (status) => {
    const { call } = await frozenSandbox();
    const { shipment, label } = await labelled(call);
    expect((await call('POST', `${base(shipment, label)}/advance`, { body: { status } })).status).toBe(200);
    const before = await track(call, label.tracking_number);

    const response = await call('POST', `${base(shipment, label)}/scenario`, { body: { name: 'express' } });
    expect(expectError(response, 422, 'invalid_transition', 'name').message).toBe(
      `The parcel is ${status}; no scenario plays after that.`,
    );
    await advanceClock(call, '10d');
    expect(await track(call, label.tracking_number)).toEqual(before);
  });

  it('switches a parcel to a scenario that ends in an exception', async () => {
    const { call } = await frozenSandbox();
    const { shipment, label } = await labelled(call);
    const response = await call('POST', `${base(shipment, label)}/scenario`, {
      body: { name: 'exception_lost' },
    });
    expect(response.json.steps.map((step: TrackingEvent) => step.status)).toEqual([
      'accepted',
      'in_transit',
      'in_transit',
      'exception',
      'exception',
    ]);
    await advanceClock(call, '10d');
    expect((await track(call, label.tracking_number)).status).toBe('exception');
    expect(await events(call, 'tracking.exception')).toHaveLength(2);
    expect(await events(call, 'tracking.delivered')).toEqual([]);
  });

  it('appends a custom event with its own description and location', async () => {
    const { call } = await frozenSandbox();
    const { shipment, label, plan } = await labelled(call);
    await advanceClock(call, '1h');
    const body = {
      status: 'in_transit',
      description: 'Held for customs inspection',
      location: 'Memphis, TN, US',
    };
    const response = await call('POST', `${base(shipment, label)}/events`, { body });
    expect(response.status).toBe(201);
    expect(response.json.status).toBe('in_transit');
    expect(response.json.events[0]).toEqual({ ...body, occurred_at: '2026-11-22T09:00:00Z' });
    expect(await track(call, label.tracking_number)).toEqual(response.json);
    const updates = await events(call, 'tracking.updated');
    expect(updates).toHaveLength(2);
    expect(updates[0]).toMatchObject({ created_at: '2026-11-22T09:00:00Z', data: response.json });
    expect((await call('GET', `/v1/shipments/${shipment.id}`)).json.status).toBe('in_transit');

    // The scenario goes on around it.
    const ran = await advanceClock(call, '5d');
    expect(ran).toHaveLength(plan('standard', T0).length - 1);
    expect((await track(call, label.tracking_number)).events).toHaveLength(plan('standard', T0).length + 1);
  });

  it('fills in the description and location of a custom event', async () => {
    const { call } = await frozenSandbox();
    const { shipment, label } = await labelled(call);
    const before = await track(call, label.tracking_number);
    const response = await call('POST', `${base(shipment, label)}/events`, { body: { status: 'exception' } });
    expect(response.status).toBe(201);
    expect(response.json.events[0]).toEqual({
      status: 'exception',
      description: 'Exception',
      location: before.events[0]?.location,
      occurred_at: NOW,
    });
    expect(await events(call, 'tracking.exception')).toHaveLength(1);

    const ofd = await call('POST', `${base(shipment, label)}/events`, {
      body: { status: 'out_for_delivery' },
    });
    expect(ofd.json.events[0]).toMatchObject({
      description: 'Out for delivery',
      location: before.events[0]?.location,
    });
  });

  it('ends the scenario with a custom delivered event', async () => {
    const { call } = await frozenSandbox();
    const { shipment, label } = await labelled(call);
    const response = await call('POST', `${base(shipment, label)}/events`, {
      body: { status: 'delivered', description: 'Delivered to the neighbour', location: 'Brooklyn, NY, US' },
    });
    expect(response.status).toBe(201);
    expect(statuses(response.json)).toEqual(['delivered', 'pre_transit']);
    expect(response.json.estimated_delivery).toBe(NOW);
    expect((await events(call, 'tracking.delivered')).map((event) => event.data)).toEqual([
      {
        tracking_number: label.tracking_number,
        carrier: label.carrier,
        status: 'delivered',
        delivered_at: NOW,
      },
    ]);
    expect((await call('GET', `/v1/shipments/${shipment.id}`)).json.status).toBe('delivered');
    expect(await advanceClock(call, '10d')).toEqual([]);
  });

  it('refuses a voided label or a cancelled shipment', async () => {
    const { call } = await frozenSandbox();
    const voided = await labelled(call);
    expect((await call('DELETE', `/v1/labels/${voided.label.id}`)).status).toBe(200);
    const cancelled = await labelled(call);
    expect((await call('DELETE', `/v1/shipments/${cancelled.shipment.id}`)).status).toBe(200);
    for (const { shipment, label } of [voided, cancelled]) {
      const path = base(shipment, label);
      expectError(
        await call('POST', `${path}/advance`, { body: { status: 'delivered' } }),
        422,
        'no_active_label',
      );
      expectError(
        await call('POST', `${path}/scenario`, { body: { name: 'express' } }),
        422,
        'no_active_label',
      );
      expectError(
        await call('POST', `${path}/events`, { body: { status: 'delivered' } }),
        422,
        'no_active_label',
      );
      expect((await track(call, label.tracking_number)).events).toHaveLength(1);
    }
    expect(await advanceClock(call, '10d')).toEqual([]);
  });

  it.each([
    ['scenario', { name: 'warp_speed' }, 422, 'invalid_field', 'name'],
    ['scenario', { name: '' }, 422, 'invalid_field', 'name'],
    ['scenario', { name: 7 }, 422, 'invalid_field', 'name'],
    ['scenario', {}, 422, 'missing_field', 'name'],
    ['scenario', { name: 'express', at: 'now' }, 422, 'invalid_field', 'at'],
    ['advance', { status: 'lost' }, 422, 'invalid_field', 'status'],
    ['advance', { status: 'DELIVERED' }, 422, 'invalid_field', 'status'],
    ['advance', {}, 422, 'missing_field', 'status'],
    ['advance', { status: 'delivered', when: 'now' }, 422, 'invalid_field', 'when'],
    ['events', { status: 'lost' }, 422, 'invalid_field', 'status'],
    ['events', { description: 'Lost' }, 422, 'missing_field', 'status'],
    ['events', { status: 'exception', description: '' }, 422, 'invalid_field', 'description'],
    ['events', { status: 'exception', description: 'x'.repeat(201) }, 422, 'invalid_field', 'description'],
    ['events', { status: 'exception', location: 42 }, 422, 'invalid_field', 'location'],
    ['events', { status: 'exception', occurred_at: NOW }, 422, 'invalid_field', 'occurred_at'],
    ['events', '{"status": ', 400, 'invalid_json', undefined],
    ['advance', '["delivered"]', 400, 'invalid_json', undefined],
  ])('POST …/%s %j is refused', async (control, body, status, code, field) => {
    const { call } = await frozenSandbox();
    const { shipment, label } = await labelled(call);
    expectError(await call('POST', `${base(shipment, label)}/${control}`, { body }), status, code, field);
    expect(await track(call, label.tracking_number)).toMatchObject({ status: 'pre_transit', events: [{}] });
  });

  it("answers 404 for unknown subjects and another account's, and 401 without a key", async () => {
    const sandbox = await frozenSandbox();
    const { call } = sandbox;
    const other = await sandbox.newAccount();
    const theirs = await labelled(call, other);
    const unknown = { id: 'shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2' };
    const unknownLabel = { tracking_number: '9400111202555842332669' };
    const controls = [
      ['scenario', { name: 'express' }],
      ['advance', { status: 'delivered' }],
      ['events', { status: 'delivered' }],
    ] as const;
    for (const [control, body] of controls) {
      expectError(
        await call('POST', `${base(unknown, unknownLabel)}/${control}`, { body }),
        404,
        'not_found',
      );
      expectError(
        await call('POST', `${base(theirs.shipment, theirs.label)}/${control}`, { body }),
        404,
        'not_found',
      );
      expectError(
        await call('POST', `${base(theirs.shipment, theirs.label)}/${control}`, { body, key: null }),
        401,
        'missing_api_key',
      );
    }
    const magic = { id: unknown.id, tracking_number: MAGIC_TRACKING_NUMBERS[0]!.number };
    expectError(
      await call('POST', `${base(magic, magic)}/events`, { body: { status: 'delivered' } }),
      404,
      'not_found',
    );
    // The other account's parcel did not move.
    expect((await track(call, theirs.label.tracking_number, other)).events).toHaveLength(1);
  });
});

describe('the tracking controls by shipment id', () => {
  it('refuses a shipment without a label', async () => {
    const sandbox = await frozenSandbox();
    const shipment = await sandbox.newShipment();
    for (const [control, body] of [
      ['scenario', { name: 'express' }],
      ['advance', { status: 'delivered' }],
      ['events', { status: 'delivered' }],
    ] as const) {
      expectError(
        await sandbox.call('POST', `/_sandbox/shipments/${shipment.id}/${control}`, { body }),
        422,
        'no_active_label',
      );
    }
    expect((await sandbox.call('GET', `/v1/shipments/${shipment.id}`)).json.status).toBe('created');
  });
});

describe('POST /_sandbox/account default_scenario', () => {
  it('refuses a scenario that does not exist and keeps the old one', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('POST', '/_sandbox/account', {
      body: { default_scenario: 'teleport' },
    });
    const error = expectError(response, 422, 'invalid_field', 'default_scenario');
    expect(error.message).toContain('standard');
    expect((await sandbox.call('GET', '/_sandbox/account')).json.default_scenario).toBe('standard');
    expectError(
      await sandbox.call('POST', '/_sandbox/account', { body: { default_scenario: '' } }),
      422,
      'invalid_field',
      'default_scenario',
    );
  });
});

describe('magic tracking numbers', () => {
  it.each(MAGIC_TRACKING_NUMBERS.map((entry) => [entry.number, entry.scenario, entry.finalStatus] as const))(
    '%s (%s) answers %s, the same for every account and on every call',
    async (number, _scenario, finalStatus) => {
      const sandbox = await createTestSandbox();
      const fresh = await sandbox.newAccount();
      const tracking = await track(sandbox.call, number, fresh);
      const expected = magicTimeline(number, SCENARIOS, testConfig().seed)!;
      expect(tracking).toEqual({
        tracking_number: number,
        carrier: 'usps',
        status: finalStatus,
        estimated_delivery: formatTimestamp(expected.estimatedDelivery),
        events: expected.steps.map((step) => asEvent(step)).reverse(),
      });
      expect(tracking.events.at(-1)).toMatchObject({
        status: 'pre_transit',
        occurred_at: '2026-01-05T09:00:00Z',
      });
      for (const [i, event] of tracking.events.entries()) {
        expect(event.location).toMatch(LOCATION);
        const older = tracking.events[i + 1];
        if (older) expect(event.occurred_at >= older.occurred_at).toBe(true);
      }
      expect(await track(sandbox.call, number, fresh)).toEqual(tracking);
      expect(await track(sandbox.call, number)).toEqual(tracking);
      // Time passing on the account's clock changes nothing.
      await sandbox.call('POST', '/_sandbox/clock/advance', { key: fresh, body: { by: '30d' } });
      expect(await track(sandbox.call, number, fresh)).toEqual(tracking);
    },
  );

  it('still needs a key', async () => {
    const sandbox = await createTestSandbox();
    expectError(
      await sandbox.call('GET', `/v1/tracking/${MAGIC_TRACKING_NUMBERS[0]!.number}`, { key: null }),
      401,
      'missing_api_key',
    );
  });
});
