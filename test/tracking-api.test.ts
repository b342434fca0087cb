import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import { testConfig } from '../src/config/index.js';
import { moveClockTo } from '../src/core/clock.js';
import { DAY, formatTimestamp, HOUR } from '../src/core/time.js';
import { openDatabase } from '../src/db/database.js';
import { postgresDatabase } from '../src/db/postgres.js';
import { sqliteDatabase } from '../src/db/sqlite.js';
import { loadScenarios, scenarioDirectories } from '../src/scenarios/files.js';
import type { TrackingStatus } from '../src/scenarios/vocabulary.js';
import { planTimeline, type TimelineStep } from '../src/tracking/timeline.js';
import { createSandbox } from '../src/wiring.js';
import { newPostgresSchema, TEST_ENGINE } from './databases.js';
import {
  capturingLogger,
  createTestSandbox,
  DEFAULT_KEY,
  expectError,
  shipmentRequest,
  type TestSandbox,
} from './helpers.js';

const T0 = Date.UTC(2026, 10, 22, 8, 0, 0);
const SCENARIOS = loadScenarios(scenarioDirectories(undefined));
const LOCATION = /^[^,]+(, [A-Z]{2,3})?, [A-Z]{2}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/** The contract's mapping of tracking statuses onto the shipment's status. */
const SHIPMENT_STATUS: Record<TrackingStatus, string> = {
  pre_transit: 'label_generated',
  accepted: 'in_transit',
  in_transit: 'in_transit',
  out_for_delivery: 'in_transit',
  delivered: 'delivered',
  exception: 'in_transit',
  returned: 'in_transit',
};

/** What every scenario ends in when played to its end. */
const FINAL_STATUS: Record<string, TrackingStatus> = {
  standard: 'delivered',
  express: 'delivered',
  exception_then_delivered: 'delivered',
  exception_lost: 'exception',
  returned_to_sender: 'returned',
  delayed_weather: 'delivered',
  stuck_pre_transit: 'pre_transit',
};

type Call = TestSandbox['call'];

interface Tracking {
  tracking_number: string;
  carrier: string;
  status: TrackingStatus;
  estimated_delivery: string;
  events: { status: TrackingStatus; description: string; location: string; occurred_at: string }[];
}

async function frozenSandbox() {
  const sandbox = await createTestSandbox();
  expect((await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } })).status).toBe(200);
  return sandbox;
}

/** A shipment with a label, and the label's timeline as the engine must have planned it. */
async function labelled(call: Call, key: string = DEFAULT_KEY, scenario = 'standard') {
  const created = await call('POST', '/v1/shipments', { key, body: shipmentRequest() });
  expect(created.status).toBe(201);
  const response = await call('POST', '/v1/labels', {
    key,
    body: { shipment_id: created.json.id, format: 'zpl' },
  });
  expect(response.status).toBe(201);
  const label = response.json as { id: string; tracking_number: string; carrier: string; created_at: string };
  const shipment = (await call('GET', `/v1/shipments/${created.json.id}`, { key })).json;
  const plan = planTimeline(
    {
      seed: testConfig().seed,
      labelId: label.id,
      carrier: label.carrier,
      from: shipment.from,
      to: shipment.to,
      startedAt: Date.parse(label.created_at),
    },
    SCENARIOS.get(scenario)!,
  );
  return { shipment: shipment as { id: string; carrier: string }, label, plan };
}

const asEvent = (step: TimelineStep) => ({
  status: step.status,
  description: step.description,
  location: step.location,
  occurred_at: formatTimestamp(step.occurredAt),
});

/** The events a label shows once `steps` have happened: newest first. */
const shown = (steps: readonly TimelineStep[]) => steps.map(asEvent).reverse();

async function track(call: Call, number: string, key?: string): Promise<Tracking> {
  const response = await call('GET', `/v1/tracking/${number}`, { key });
  expect(response.status).toBe(200);
  return response.json;
}

async function events(call: Call, type?: string, key?: string) {
  const response = await call('GET', `/_sandbox/events${type ? `?event=${type}` : ''}`, { key });
  expect(response.status).toBe(200);
  return response.json.data as { id: string; event: string; created_at: string; data: any }[];
}

async function advance(call: Call, by: string | number, key?: string) {
  const response = await call('POST', '/_sandbox/clock/advance', { key, body: { by } });
  expect(response.status).toBe(200);
  return response.json as {
    now: string;
    ran: { id: string; kind: string; subject: string; due_at: string }[];
  };
}

async function shipmentStatus(call: Call, id: string, key?: string) {
  return (await call('GET', `/v1/shipments/${id}`, { key })).json.status as string;
}

function expectWellFormed(tracking: Tracking, createdAt: string) {
  expect(Object.keys(tracking).sort()).toEqual([
    'carrier',
    'estimated_delivery',
    'events',
    'status',
    'tracking_number',
  ]);
  expect(tracking.status).toBe(tracking.events[0]?.status);
  expect(tracking.events.at(-1)).toMatchObject({ status: 'pre_transit', occurred_at: createdAt });
  for (const [i, event] of tracking.events.entries()) {
    expect(Object.keys(event).sort()).toEqual(['description', 'location', 'occurred_at', 'status']);
    expect(event.location).toMatch(LOCATION);
    expect(event.occurred_at).toMatch(TIMESTAMP);
    expect(event.description.length).toBeGreaterThan(0);
    const older = tracking.events[i + 1];
    if (older) expect(Date.parse(event.occurred_at)).toBeGreaterThanOrEqual(Date.parse(older.occurred_at));
  }
}

describe('GET /v1/tracking/:tracking_number', () => {
  it('answers for a new label without the carrier: pre_transit at the label creation', async () => {
    const sandbox = await frozenSandbox();
    const { label, plan } = await labelled(sandbox.call);
    const tracking = await track(sandbox.call, label.tracking_number);
    expect(tracking).toEqual({
      tracking_number: label.tracking_number,
      carrier: label.carrier,
      status: 'pre_transit',
      estimated_delivery: formatTimestamp(plan.at(-1)!.occurredAt),
      events: shown(plan.slice(0, 1)),
    });
    expectWellFormed(tracking, label.created_at);
    expect(tracking.events[0]?.occurred_at).toBe('2026-11-22T08:00:00Z');
    // The same answer on every call.
    expect(await track(sandbox.call, label.tracking_number)).toEqual(tracking);
  });

  it('answers 404 for an unknown number and for the number of another account', async () => {
    const sandbox = await frozenSandbox();
    const { label } = await labelled(sandbox.call);
    expectError(await sandbox.call('GET', '/v1/tracking/9400111202555842332669'), 404, 'not_found');
    expectError(await sandbox.call('GET', '/v1/tracking/nope'), 404, 'not_found');
    const other = await sandbox.newAccount();
    expectError(
      await sandbox.call('GET', `/v1/tracking/${label.tracking_number}`, { key: other }),
      404,
      'not_found',
    );
    expectError(
      await sandbox.call('GET', `/v1/tracking/${label.tracking_number}`, { key: null }),
      401,
      'missing_api_key',
    );
  });

  it('plays the standard scenario hour by hour on a frozen clock', async () => {
    const sandbox = await frozenSandbox();
    const { call } = sandbox;
    const { shipment, label, plan } = await labelled(call);
    const delivered = plan.at(-1)!;
    expect(plan.map((step) => step.status)).toEqual([
      'pre_transit',
      'accepted',
      'in_transit',
      'in_transit',
      'in_transit',
      'in_transit',
      'in_transit',
      'out_for_delivery',
      'delivered',
    ]);
    expect(delivered.occurredAt - T0).toBeLessThan(4 * DAY);

    let applied = 1;
    for (let hour = 1; hour <= 96; hour++) {
      const now = T0 + hour * HOUR;
      const { ran, now: clockNow } = await advance(call, '1h');
      expect(clockNow).toBe(formatTimestamp(now));
      const due = plan.filter((step) => step.occurredAt > now - HOUR && step.occurredAt <= now);
      expect(ran.map((job) => [job.kind, job.subject, job.due_at])).toEqual(
        due.map((step) => ['tracking.step', label.id, formatTimestamp(step.occurredAt)]),
      );
      applied += due.length;

      const tracking = await track(call, label.tracking_number);
      const current = plan[applied - 1]!;
      expect(tracking.status).toBe(current.status);
      expect(tracking.events).toEqual(shown(plan.slice(0, applied)));
      expect(tracking.estimated_delivery).toBe(formatTimestamp(delivered.occurredAt));
      expectWellFormed(tracking, label.created_at);
      expect(await shipmentStatus(call, shipment.id)).toBe(SHIPMENT_STATUS[current.status]);

      // One tracking.updated per tracking event, stamped with the event's own time, holding the record.
      const updates = await events(call, 'tracking.updated');
      expect(updates.map((event) => event.created_at)).toEqual(tracking.events.map((e) => e.occurred_at));
      expect(updates[0]?.data).toEqual(tracking);
      if (due.length > 0) expect(new Set(updates.map((event) => event.id)).size).toBe(applied);
    }
    expect(applied).toBe(plan.length);

    // The whole log, newest first: each delivered step's tracking.updated comes just before its
    // tracking.delivered, after the label's own events.
    const log = await events(call);
    expect(log.map((event) => event.event)).toEqual([
      'tracking.delivered',
      ...plan.map(() => 'tracking.updated'),
      'label.generated',
      'shipment.created',
    ]);
    expect(log[0]).toMatchObject({
      created_at: formatTimestamp(delivered.occurredAt),
      data: {
        tracking_number: label.tracking_number,
        carrier: label.carrier,
        status: 'delivered',
        delivered_at: formatTimestamp(delivered.occurredAt),
      },
    });
    expect(Object.keys(log[0]?.data).sort()).toEqual([
      'carrier',
      'delivered_at',
      'status',
      'tracking_number',
    ]);
    expect(await events(call, 'tracking.exception')).toEqual([]);

    // Nothing is left to run.
    expect((await advance(call, '30d')).ran).toEqual([]);
    expect((await track(call, label.tracking_number)).events).toHaveLength(plan.length);
  });
});

describe('the clock drives tracking', () => {
  it('runs every due step of one jump in time order, each stamped with its own time, before answering', async () => {
    const sandbox = await frozenSandbox();
    const { call } = sandbox;
    const { label, plan } = await labelled(call);
    const jump = await advance(call, '4d');
    expect(jump.now).toBe('2026-11-26T08:00:00Z');
    expect(jump.ran).toEqual(
      plan.slice(1).map((step) => ({
        id: expect.stringMatching(/^job_/),
        kind: 'tracking.step',
        subject: label.id,
        due_at: formatTimestamp(step.occurredAt),
        tracking_number: label.tracking_number,
        status: step.status,
      })),
    );
    const tracking = await track(call, label.tracking_number);
    expect(tracking.events).toEqual(shown(plan));
    const updates = await events(call, 'tracking.updated');
    expect(updates.map((event) => event.created_at)).toEqual(shown(plan).map((event) => event.occurred_at));
    // Each record is the tracking as it stood after its own event, not as it stands at the end.
    expect(updates.map((event) => event.data.status)).toEqual(shown(plan).map((event) => event.status));
    expect(updates.map((event) => event.data.events.length)).toEqual(plan.map((_, i) => plan.length - i));
  });

  it('plays the same timeline on a running clock, once the scheduler runs what fell due', async () => {
    const sandbox = await createTestSandbox();
    const { call, scheduler, wall } = sandbox;
    await call('POST', '/_sandbox/clock', { body: { speed: 3600 } });
    const { label, plan } = await labelled(call);
    // 40 seconds of real time at 3600x: 40 hours on the account's clock.
    wall.now += 40_000;
    await scheduler.start();
    await scheduler.stop();
    const happened = plan.filter((step) => step.occurredAt <= T0 + 40 * HOUR);
    expect(happened.length).toBeGreaterThan(2);
    expect(happened.length).toBeLessThan(plan.length);
    expect((await track(call, label.tracking_number)).events).toEqual(shown(happened));
    wall.now += 60_000;
    await scheduler.start();
    await scheduler.stop();
    expect((await track(call, label.tracking_number)).events).toEqual(shown(plan));
  });

  it('keeps events newest first when a step runs after a later event was added', async () => {
    const sandbox = await createTestSandbox();
    const { call, wall } = sandbox;
    const { label, plan } = await labelled(call);
    // Ten hours pass on the running clock while nothing runs the scheduler: two steps are overdue.
    wall.now += 10 * HOUR;
    const custom = await call('POST', `/_sandbox/tracking/${label.tracking_number}/events`, {
      body: { status: 'exception', description: 'Damaged in handling', location: 'Reno, NV, US' },
    });
    expect(custom.status).toBe(201);
    expect((await advance(call, 0)).ran.map((job) => job.due_at)).toEqual(
      plan.slice(1, 3).map((step) => formatTimestamp(step.occurredAt)),
    );
    const tracking = await track(call, label.tracking_number);
    expect(tracking.events.map((event) => [event.status, event.occurred_at])).toEqual([
      ['exception', '2026-11-22T18:00:00Z'],
      ...shown(plan.slice(0, 3)).map((event) => [event.status, event.occurred_at]),
    ]);
    expect(tracking.status).toBe('exception');
    expectWellFormed(tracking, label.created_at);
  });
});

describe('scenarios', () => {
  it('lists the built-in scenarios with their steps', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('GET', '/_sandbox/scenarios');
    expect(response.status).toBe(200);
    const byName = new Map(
      (response.json.data as { name: string; description: string; steps: any[] }[]).map((s) => [s.name, s]),
    );
    for (const name of Object.keys(FINAL_STATUS)) {
      expect(byName.get(name)?.description, name).toMatch(/\w/);
      expect(byName.get(name)?.steps[0], name).toMatchObject({ after: 0, status: 'pre_transit' });
    }
    expect(byName.get('standard')?.steps.map((step: { after: number }) => step.after / 3600)).toEqual([
      0, 5, 4, 3, 20, 12, 12, 8, 5,
    ]);
    expectError(await sandbox.call('GET', '/_sandbox/scenarios', { key: null }), 401, 'missing_api_key');
  });

  it("starts the account's default scenario: standard, until the account changes it", async () => {
    const sandbox = await frozenSandbox();
    const { call } = sandbox;
    expect((await call('GET', '/_sandbox/account')).json.default_scenario).toBe('standard');
    const other = await sandbox.newAccount();

    const changed = await call('POST', '/_sandbox/account', { body: { default_scenario: 'express' } });
    expect(changed.status).toBe(200);
    expect(changed.json.default_scenario).toBe('express');
    expect((await call('GET', '/_sandbox/account')).json.default_scenario).toBe('express');

    const express = await labelled(call, DEFAULT_KEY, 'express');
    const standard = await labelled(call, other, 'standard');
    await advance(call, '2d');
    await advance(call, '4d', other);
    expect((await track(call, express.label.tracking_number)).events).toEqual(shown(express.plan));
    expect((await track(call, standard.label.tracking_number, other)).events).toEqual(shown(standard.plan));
    expect(express.plan.at(-1)!.occurredAt - T0).toBeLessThan(DAY);
  });

  it.each(Object.entries(FINAL_STATUS))('plays %s to its end: %s', async (name, final) => {
    const sandbox = await frozenSandbox();
    const { call } = sandbox;
    await call('POST', '/_sandbox/account', { body: { default_scenario: name } });
    const { shipment, label, plan } = await labelled(call, DEFAULT_KEY, name);
    expect(plan).toHaveLength(SCENARIOS.get(name)!.steps.length);

    const { ran } = await advance(call, '30d');
    expect(ran).toHaveLength(plan.length - 1);
    const tracking = await track(call, label.tracking_number);
    expect(tracking.status).toBe(final);
    expect(tracking.events).toEqual(shown(plan));
    expectWellFormed(tracking, label.created_at);
    expect(await shipmentStatus(call, shipment.id)).toBe(SHIPMENT_STATUS[final]);

    const count = (status: TrackingStatus) => plan.filter((step) => step.status === status).length;
    expect(await events(call, 'tracking.updated')).toHaveLength(plan.length);
    const exceptions = await events(call, 'tracking.exception');
    expect(exceptions.map((event) => event.created_at)).toEqual(
      shown(plan)
        .filter((event) => event.status === 'exception')
        .map((event) => event.occurred_at),
    );
    expect(exceptions.map((event) => event.data.status)).toEqual(exceptions.map(() => 'exception'));
    expect(await events(call, 'tracking.delivered')).toHaveLength(count('delivered'));

    const deliveredStep = plan.findLast((step) => step.status === 'delivered');
    if (deliveredStep) expect(tracking.estimated_delivery).toBe(formatTimestamp(deliveredStep.occurredAt));
    else expect(Date.parse(tracking.estimated_delivery)).toBeGreaterThan(T0);

    // Only a parcel that never left pre_transit can still be voided.
    const voided = await call('DELETE', `/v1/labels/${label.id}`);
    if (final === 'pre_transit') expect(voided.status).toBe(200);
    else expectError(voided, 422, 'label_already_scanned');
  });
});

describe('labels, shipments and tracking', () => {
  it('lets a label be voided before the first scan and not after it', async () => {
    const sandbox = await frozenSandbox();
    const { call } = sandbox;
    const { label, plan } = await labelled(call);
    await advance(call, (plan[1]!.occurredAt - T0) / 1000 - 1);
    expect((await track(call, label.tracking_number)).status).toBe('pre_transit');
    const second = await labelled(call);
    await advance(call, 1);
    expect((await track(call, label.tracking_number)).status).toBe('accepted');

    const refused = await call('DELETE', `/v1/labels/${label.id}`);
    expectError(refused, 422, 'label_already_scanned');
    expect(refused.json.error.message).toContain(formatTimestamp(plan[1]!.occurredAt));
    expect((await call('DELETE', `/v1/labels/${second.label.id}`)).status).toBe(200);
  });

  it.each([
    [
      'cancelling the shipment',
      (s: { id: string }, _l: { id: string }) => `/v1/shipments/${s.id}`,
      'cancelled',
    ],
    ['voiding the label', (_s: { id: string }, l: { id: string }) => `/v1/labels/${l.id}`, 'created'],
  ])('stops the scenario on %s', async (_what, target, finalShipmentStatus) => {
    const sandbox = await frozenSandbox();
    const { call, db } = sandbox;
    const { shipment, label, plan } = await labelled(call);
    expect((await call('DELETE', target(shipment, label))).status).toBe(200);
    const cancelledSteps = await db.all<Record<string, unknown>>('SELECT * FROM jobs WHERE subject = ?', [
      label.id,
    ]);
    // A label keeps one job, its next step (the later ones are added as each runs), now cancelled.
    expect(cancelledSteps).toEqual([expect.objectContaining({ state: 'cancelled' })]);

    expect((await advance(call, '30d')).ran).toEqual([]);
    const tracking = await track(call, label.tracking_number);
    expect(tracking.events).toEqual(shown(plan.slice(0, 1)));
    expect(await shipmentStatus(call, shipment.id)).toBe(finalShipmentStatus);
    expect(await events(call, 'tracking.updated')).toHaveLength(1);
    // Finished (here cancelled) jobs are deleted once they are a day old on the account's clock.
    expect(await db.value('SELECT count(*) FROM jobs WHERE subject = ?', [label.id])).toBe(0);

    // Even a step that escaped the cancellation takes no effect, and adds none of the steps after it.
    for (const step of cancelledSteps)
      await db.run(
        `INSERT INTO jobs (id, account_id, kind, subject, payload, due_at, state, created_at)
         VALUES (@id, @account_id, @kind, @subject, @payload, @due_at, 'pending', @created_at)`,
        step,
      );
    const { ran } = await advance(call, '1d');
    expect(ran).toHaveLength(1);
    expect(ran.every((job) => (job as { skipped?: boolean }).skipped === true)).toBe(true);
    expect((await track(call, label.tracking_number)).events).toHaveLength(1);
    expect(await events(call, 'tracking.updated')).toHaveLength(1);
    expect(await events(call, 'tracking.delivered')).toEqual([]);
    expect(await shipmentStatus(call, shipment.id)).toBe(finalShipmentStatus);
  });

  it('plays a new label of a shipment whose label was voided, and leaves the old one alone', async () => {
    const sandbox = await frozenSandbox();
    const { call } = sandbox;
    const { shipment, label } = await labelled(call);
    await advance(call, '1h');
    expect((await call('DELETE', `/v1/labels/${label.id}`)).status).toBe(200);
    const second = await call('POST', '/v1/labels', { body: { shipment_id: shipment.id, format: 'zpl' } });
    expect(second.status).toBe(201);
    const { ran } = await advance(call, '5d');
    expect(new Set(ran.map((job) => job.subject))).toEqual(new Set([second.json.id]));
    expect((await track(call, second.json.tracking_number)).status).toBe('delivered');
    expect((await track(call, label.tracking_number)).events).toHaveLength(1);
    expect(await shipmentStatus(call, shipment.id)).toBe('delivered');
  });
});

describe('accounts', () => {
  it("keeps each account's tracking on its own clock", async () => {
    const sandbox = await frozenSandbox();
    const { call } = sandbox;
    const other = await sandbox.newAccount();
    await call('POST', '/_sandbox/clock', { key: other, body: { frozen: true } });
    const mine = await labelled(call);
    const theirs = await labelled(call, other);

    const { ran } = await advance(call, '4d');
    expect(ran.map((job) => job.subject)).toEqual(mine.plan.slice(1).map(() => mine.label.id));
    expect((await track(call, mine.label.tracking_number)).status).toBe('delivered');
    expect((await track(call, theirs.label.tracking_number, other)).events).toEqual(
      shown(theirs.plan.slice(0, 1)),
    );
    expect(await shipmentStatus(call, theirs.shipment.id, other)).toBe('label_generated');
    expect(await events(call, 'tracking.updated', other)).toHaveLength(1);
    expect((await call('GET', '/_sandbox/clock', { key: other })).json.now).toBe('2026-11-22T08:00:00Z');

    const theirRun = await advance(call, '1d', other);
    const due = theirs.plan.filter((step) => step.occurredAt <= T0 + DAY);
    expect(theirRun.ran.map((job) => [job.subject, job.due_at])).toEqual(
      due.slice(1).map((step) => [theirs.label.id, formatTimestamp(step.occurredAt)]),
    );
    expect((await track(call, theirs.label.tracking_number, other)).events).toEqual(shown(due));
    expect(await events(call, 'tracking.updated')).toHaveLength(mine.plan.length);
  });
});

describe('a restart', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** Where a sandbox keeps its data across a restart: a SQLite file, or a PostgreSQL schema of its own. */
  async function databaseFile() {
    if (TEST_ENGINE === 'postgres') return newPostgresSchema();
    const dir = mkdtempSync(path.join(tmpdir(), 'sandbox-tracking-'));
    dirs.push(dir);
    return path.join(dir, 'sandbox.db');
  }

  /** The app over a database file, as `startServer` builds it, without listening. */
  async function open(file: string, wall: { now: number }) {
    const config = testConfig();
    const database =
      TEST_ENGINE === 'postgres'
        ? postgresDatabase(file, { poolSize: 4 })
        : sqliteDatabase(openDatabase(file), file);
    const state = await createSandbox({
      database,
      config,
      logger: capturingLogger().logger,
      scenarios: SCENARIOS,
      realNow: () => wall.now,
    });
    const { app } = state;
    const call: Call = async (method, target, options = {}) => {
      const headers: Record<string, string> = { authorization: `Bearer ${options.key ?? DEFAULT_KEY}` };
      if (options.body !== undefined) headers['content-type'] = 'application/json';
      const body = options.body === undefined ? undefined : JSON.stringify(options.body);
      const response = await app.request(target, { method, headers, body });
      const bytes = new Uint8Array(await response.arrayBuffer());
      const text = new TextDecoder().decode(bytes);
      return {
        status: response.status,
        headers: response.headers,
        json: text ? JSON.parse(text) : undefined,
        text,
        bytes,
      };
    };
    return { database, state, call };
  }

  it('loses nothing and repeats nothing when the sandbox restarts half-way through a scenario', async () => {
    const file = await databaseFile();
    const wall = { now: T0 };
    const before = await open(file, wall);
    await before.call('POST', '/_sandbox/clock', { body: { frozen: true } });
    const { shipment, label, plan } = await labelled(before.call);
    const half = await advance(before.call, '40h');
    const early = plan.filter((step) => step.occurredAt <= T0 + 40 * HOUR);
    expect(half.ran).toHaveLength(early.length - 1);
    await before.database.close();

    wall.now += 3 * DAY;
    const after = await open(file, wall);
    expect((await after.call('GET', '/_sandbox/clock')).json).toMatchObject({
      now: '2026-11-24T00:00:00Z',
      frozen: true,
    });
    expect((await track(after.call, label.tracking_number)).events).toEqual(shown(early));
    const rest = await advance(after.call, '3d');
    expect(rest.ran.map((job) => job.due_at)).toEqual(
      plan.slice(early.length).map((step) => formatTimestamp(step.occurredAt)),
    );
    expect((await track(after.call, label.tracking_number)).events).toEqual(shown(plan));
    expect(await events(after.call, 'tracking.updated')).toHaveLength(plan.length);
    expect(await events(after.call, 'tracking.delivered')).toHaveLength(1);
    expect(await shipmentStatus(after.call, shipment.id)).toBe('delivered');
    expect((await advance(after.call, '30d')).ran).toEqual([]);
    await after.database.close();
  });

  it('runs the steps that fell due while the sandbox was stopped when the scheduler starts', async () => {
    const file = await databaseFile();
    const wall = { now: T0 };
    const before = await open(file, wall);
    await before.call('POST', '/_sandbox/clock', { body: { frozen: true } });
    const { label, plan } = await labelled(before.call);
    await before.database.close();

    const after = await open(file, wall);
    // The account's clock is moved while nothing runs: two days of steps are overdue.
    const { accounts } = after.state.stores;
    const account = (await accounts.find(after.state.db, DEFAULT_ACCOUNT.id))!;
    await accounts.saveClock(after.state.db, account.id, moveClockTo(account.clock, T0 + 2 * DAY, wall.now));
    expect((await track(after.call, label.tracking_number)).events).toHaveLength(1);
    await after.state.scheduler.start();
    await after.state.scheduler.stop();
    const overdue = plan.filter((step) => step.occurredAt <= T0 + 2 * DAY);
    expect(overdue.length).toBeGreaterThan(3);
    expect((await track(after.call, label.tracking_number)).events).toEqual(shown(overdue));
    const updates = await events(after.call, 'tracking.updated');
    expect(updates.map((event) => event.created_at)).toEqual(
      shown(overdue).map((event) => event.occurred_at),
    );
    await after.database.close();
  });
});
