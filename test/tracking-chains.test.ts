import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import { type Config, testConfig } from '../src/config/index.js';
import { chainedId, newId } from '../src/core/ids.js';
import { formatTimestamp, HOUR, SECOND } from '../src/core/time.js';
import { openDatabase } from '../src/db/database.js';
import { LEGACY_MIGRATIONS } from '../src/db/legacy-migrations.js';
import type { SandboxDatabase, Sql } from '../src/db/sql.js';
import { sqliteDatabase } from '../src/db/sqlite.js';
import type { Scenario } from '../src/scenarios/files.js';
import { loadScenarios, scenarioDirectories } from '../src/scenarios/files.js';
import { planTimeline, type TimelineStep } from '../src/tracking/timeline.js';
import { createSandbox } from '../src/wiring.js';
import { testDatabase } from './databases.js';
import { capturingLogger, DEFAULT_KEY, shipmentRequest } from './helpers.js';

/**
 * A label keeps one pending job, its next scenario step; each step, when it runs, adds the next. These
 * tests hold that to the behaviour of one job a step: the same steps, times, order and identifiers.
 */

const T0 = Date.UTC(2026, 10, 22, 8, 0, 0);
const BUILT_IN = loadScenarios(scenarioDirectories(undefined));

/** Steps a second or two apart have no jitter, so two labels' steps can fall due at the same instant. */
const TIGHT_A: Scenario = {
  name: 'tight_a',
  description: 'accepted after 2 s, in transit 1 s later',
  steps: [
    { afterMs: 0, status: 'pre_transit' },
    { afterMs: 2 * SECOND, status: 'accepted' },
    { afterMs: SECOND, status: 'in_transit' },
  ],
};
const TIGHT_B: Scenario = {
  name: 'tight_b',
  description: 'accepted after 1 s, in transit 2 s later',
  steps: [
    { afterMs: 0, status: 'pre_transit' },
    { afterMs: SECOND, status: 'accepted' },
    { afterMs: 2 * SECOND, status: 'in_transit' },
  ],
};
const CUSTOM: Scenario = {
  name: 'custom',
  description: 'a scenario file of the merchant',
  steps: [
    { afterMs: 0, status: 'pre_transit' },
    { afterMs: 3 * HOUR, status: 'accepted', description: 'Picked up in {city}' },
    { afterMs: 5 * HOUR, status: 'in_transit' },
    { afterMs: 7 * HOUR, status: 'out_for_delivery' },
    { afterMs: 2 * HOUR, status: 'delivered', description: 'Handed over' },
  ],
};

const dirs: string[] = [];
/** The databases `open` opened that their test has not closed. */
const opened = new Set<SandboxDatabase>();
afterEach(async () => {
  for (const database of opened) await database.close();
  opened.clear();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function databaseFile(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sandbox-chains-'));
  dirs.push(dir);
  return path.join(dir, 'sandbox.db');
}

type Answer = { status: number; json: any };

/**
 * The app over a SQLite file at `location`, or else a database of the run's engine, with the built-in
 * scenarios and `extra`, called in-process, its clock frozen at T0.
 */
async function open(location?: string, options: { extra?: Scenario[]; config?: Partial<Config> } = {}) {
  const database =
    location === undefined ? await testDatabase() : sqliteDatabase(openDatabase(location), location);
  opened.add(database);
  /** Closes the database, as the sandbox's process does when it stops. */
  const close = async () => {
    opened.delete(database);
    await database.close();
  };
  const scenarios = new Map(BUILT_IN);
  for (const scenario of options.extra ?? []) scenarios.set(scenario.name, scenario);
  const config = testConfig(options.config);
  const sandbox = await createSandbox({
    database,
    config,
    logger: capturingLogger().logger,
    scenarios,
    realNow: () => T0,
  });
  const call = async (method: string, target: string, body?: unknown): Promise<Answer> => {
    const headers: Record<string, string> = { authorization: `Bearer ${DEFAULT_KEY}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await sandbox.app.request(target, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, json: text ? JSON.parse(text) : undefined };
  };
  const ok = async (method: string, target: string, body?: unknown) => {
    const answer = await call(method, target, body);
    expect(answer.status, `${method} ${target}: ${JSON.stringify(answer.json)}`).toBeLessThan(300);
    return answer.json;
  };
  await ok('POST', '/_sandbox/clock', { frozen: true });

  /** A shipment with a label playing `scenario`, and its timeline as planned at its start. */
  const labelled = async (scenario = 'standard') => {
    await ok('POST', '/_sandbox/account', { default_scenario: scenario });
    const shipment = await ok('POST', '/v1/shipments', shipmentRequest());
    const label = await ok('POST', '/v1/labels', { shipment_id: shipment.id, format: 'zpl' });
    const plan = planTimeline(
      {
        seed: config.seed,
        labelId: label.id,
        carrier: label.carrier,
        from: shipment.from,
        to: shipment.to,
        startedAt: Date.parse(label.created_at),
      },
      scenarios.get(scenario) as Scenario,
    );
    return { shipment, label, plan };
  };
  const { db } = sandbox;
  const pendingJobs = (labelId: string) =>
    db.column<string>("SELECT id FROM jobs WHERE subject = ? AND state = 'pending' ORDER BY seq", [labelId]);
  const due = async () =>
    ((await ok('GET', '/_sandbox/clock/due?limit=100')).data as any[]).filter(
      (item) => item.kind === 'tracking.step',
    );
  const advance = async (by: string | number) =>
    (await ok('POST', '/_sandbox/clock/advance', { by })).ran as {
      id: string;
      subject: string;
      due_at: string;
    }[];
  return { db, close, sandbox, call, ok, labelled, pendingJobs, due, advance };
}

const asEvent = (step: TimelineStep) => ({
  status: step.status,
  description: step.description,
  location: step.location,
  occurred_at: formatTimestamp(step.occurredAt),
});

/** What `GET /_sandbox/clock/due` says of a step still to come (its `detail` is a step's payload). */
const asDue = (labelId: string, scenario: string) => (step: TimelineStep) => ({
  kind: 'tracking.step',
  subject: labelId,
  due_at: formatTimestamp(step.occurredAt),
  detail: {
    label_id: labelId,
    scenario,
    index: step.index,
    status: step.status,
    description: step.description,
    location: step.location,
  },
});

describe('a label’s scenario steps', () => {
  it('are one pending job at a time, listed step by step under the identifiers they run under', async () => {
    const { labelled, pendingJobs, due, advance, ok } = await open();
    const { label, plan } = await labelled();
    expect(plan).toHaveLength(9);
    expect(await pendingJobs(label.id)).toHaveLength(1);

    const listed = await due();
    expect(listed.map(({ id: _, ...item }) => item)).toEqual(plan.slice(1).map(asDue(label.id, 'standard')));
    const [first] = await pendingJobs(label.id);
    expect(listed.map((item) => item.id)).toEqual(
      plan.slice(1).map((_, ahead) => chainedId(first as string, ahead)),
    );

    // Step by step: one pending job all along, each run under the identifier it was listed with.
    const ran: { id: string; due_at: string }[] = [];
    for (let day = 0; day < 5; day++) {
      ran.push(...(await advance('1d')));
      expect((await pendingJobs(label.id)).length).toBeLessThanOrEqual(1);
    }
    expect(ran.map((job) => [job.id, job.due_at])).toEqual(listed.map((item) => [item.id, item.due_at]));
    const tracking = await ok('GET', `/v1/tracking/${label.tracking_number}`);
    expect(tracking.events).toEqual(plan.map(asEvent).reverse());
    expect(await pendingJobs(label.id)).toEqual([]);
  });

  it('due at the same instant run in the order they were planned in, whatever ran before them', async () => {
    const { labelled, ok, advance, due } = await open(undefined, { extra: [TIGHT_A, TIGHT_B] });
    // a is made first; b's first step runs before a's, and their second steps fall due together.
    const a = await labelled('tight_a');
    const b = await labelled('tight_b');
    expect(a.plan[2]?.occurredAt).toBe(T0 + 3 * SECOND);
    expect(b.plan[2]?.occurredAt).toBe(T0 + 3 * SECOND);
    const order = [
      [b.label.id, 'accepted'],
      [a.label.id, 'accepted'],
      [a.label.id, 'in_transit'],
      [b.label.id, 'in_transit'],
    ];
    expect((await due()).map((item) => [item.subject, item.detail.status])).toEqual(order);

    const ran = await advance(10);
    expect(ran.map((job: any) => [job.subject, job.status])).toEqual(order);
    const updates = (await ok('GET', '/_sandbox/events?event=tracking.updated')).data as any[];
    expect(updates.slice(0, 4).map((event) => [event.data.tracking_number, event.data.status])).toEqual([
      [b.label.tracking_number, 'in_transit'],
      [a.label.tracking_number, 'in_transit'],
      [a.label.tracking_number, 'accepted'],
      [b.label.tracking_number, 'accepted'],
    ]);
  });

  it('forced along the scenario, play up to the status and go on from the next step, as listed before', async () => {
    const { labelled, ok, due, advance, pendingJobs } = await open();
    const { shipment, label, plan } = await labelled();
    const before = await due();
    const forced = await ok('POST', `/_sandbox/shipments/${shipment.id}/advance`, { status: 'in_transit' });
    expect(forced.events.map((event: any) => event.status)).toEqual([
      'in_transit',
      'accepted',
      'pre_transit',
    ]);

    // The steps after the first in_transit keep their times and identifiers; one job holds them.
    expect(await pendingJobs(label.id)).toHaveLength(1);
    expect(await due()).toEqual(before.slice(2));
    const overview = await ok('GET', `/_sandbox/shipments/${shipment.id}/tracking`);
    expect(overview.upcoming).toEqual(
      plan.slice(3).map((step) => ({
        status: step.status,
        description: step.description,
        location: step.location,
        due_at: formatTimestamp(step.occurredAt),
      })),
    );
    const ran = await advance('30d');
    expect(ran.map((job) => job.id)).toEqual(before.slice(2).map((item) => item.id));

    // A terminal status ends the chain.
    const other = await labelled();
    await ok('POST', `/_sandbox/shipments/${other.shipment.id}/advance`, { status: 'delivered' });
    expect(await pendingJobs(other.label.id)).toEqual([]);
    expect(await advance('30d')).toEqual([]);
  });

  it('keep to their plan after a restart with another seed or an edited scenario; new labels take the new ones', async () => {
    const file = databaseFile();
    const first = await open(file, { extra: [CUSTOM] });
    const { shipment, label, plan } = await first.labelled('custom');
    await first.advance(4 * 3600);
    const upcoming = (await first.ok('GET', `/_sandbox/shipments/${shipment.id}/tracking`)).upcoming;
    expect(upcoming).toHaveLength(3);
    await first.close();

    const edited: Scenario = {
      ...CUSTOM,
      steps: [
        { afterMs: 0, status: 'pre_transit' },
        { afterMs: HOUR, status: 'exception', description: 'Edited' },
      ],
    };
    const second = await open(file, { extra: [edited], config: { seed: 'another seed' } });
    expect((await second.ok('GET', `/_sandbox/shipments/${shipment.id}/tracking`)).upcoming).toEqual(
      upcoming,
    );
    await second.advance('2d');
    const tracking = await second.ok('GET', `/v1/tracking/${label.tracking_number}`);
    expect(tracking.events).toEqual(plan.map(asEvent).reverse());

    const fresh = await second.labelled('custom');
    await second.advance('1d');
    const freshTracking = await second.ok('GET', `/v1/tracking/${fresh.label.tracking_number}`);
    expect(freshTracking.events).toEqual(fresh.plan.map(asEvent).reverse());
    expect(freshTracking.events[0]).toMatchObject({ status: 'exception', description: 'Edited' });
    await second.close();
  });
});

describe('a data directory from before chains', () => {
  /**
   * Turns the label's chain into the jobs one job a step wrote before chains (migration 3's columns,
   * one payload a step), as a data directory of an earlier version holds them.
   */
  async function asStepJobs(db: Sql, labelId: string, plan: TimelineStep[], scenario: string) {
    await db.run('DELETE FROM jobs WHERE subject = ?', [labelId]);
    const ids: string[] = [];
    for (const step of plan.slice(1)) {
      const id = newId('job', T0);
      const payload = {
        labelId,
        scenario,
        index: step.index,
        status: step.status,
        description: step.description,
        location: step.location,
      };
      await db.run(
        `INSERT INTO jobs (id, account_id, kind, subject, payload, due_at, state, created_at)
         VALUES (?, ?, 'tracking.step', ?, ?, ?, 'pending', ?)`,
        [id, DEFAULT_ACCOUNT.id, labelId, JSON.stringify(payload), step.occurredAt, T0],
      );
      ids.push(id);
    }
    return ids;
  }

  it('runs, lists and forces the jobs of one step each as they are', async () => {
    const file = databaseFile();
    const before = await open(file);
    const old = await before.labelled();
    const forced = await before.labelled();
    const ids = await asStepJobs(before.db, old.label.id, old.plan, 'standard');
    await asStepJobs(before.db, forced.label.id, forced.plan, 'standard');
    await before.close();

    const after = await open(file);
    // Listed as they were: each job with its own identifier and its payload as the detail.
    const listed = (await after.due()).filter((item) => item.subject === old.label.id);
    expect(listed).toEqual(
      old.plan.slice(1).map((step, i) => ({ id: ids[i], ...asDue(old.label.id, 'standard')(step) })),
    );
    const overview = await after.ok('GET', `/_sandbox/shipments/${old.shipment.id}/tracking`);
    expect(overview.upcoming.map((step: any) => step.due_at)).toEqual(listed.map((item) => item.due_at));

    // Forced along them: the played jobs are cancelled, the rest stay as they are.
    await after.ok('POST', `/_sandbox/shipments/${forced.shipment.id}/advance`, { status: 'in_transit' });
    expect(await after.pendingJobs(forced.label.id)).toHaveLength(forced.plan.length - 3);

    // A label made now keeps one job; the old ones run to their end, each under its own identifier.
    const fresh = await after.labelled();
    expect(await after.pendingJobs(fresh.label.id)).toHaveLength(1);
    const ran = await after.advance('30d');
    expect(ran.filter((job) => job.subject === old.label.id).map((job) => job.id)).toEqual(ids);
    for (const { label, plan } of [old, forced, fresh]) {
      const tracking = await after.ok('GET', `/v1/tracking/${label.tracking_number}`);
      expect(tracking.status).toBe('delivered');
      expect(tracking.events.slice(0, plan.length - 3)).toEqual(plan.slice(3).map(asEvent).reverse());
    }
    const tracking = await after.ok('GET', `/v1/tracking/${old.label.tracking_number}`);
    expect(tracking.events).toEqual(old.plan.map(asEvent).reverse());
    await after.close();
  });

  it('upgrades with the migration that adds the plans, leaving every job as it was', () => {
    const at = LEGACY_MIGRATIONS.findIndex((migration) => migration.includes('CREATE TABLE tracking_plans'));
    expect(at).toBeGreaterThan(2);
    const db = new Database(':memory:');
    db.pragma('foreign_keys = ON');
    for (const migration of LEGACY_MIGRATIONS.slice(0, at)) db.exec(migration);
    db.exec(`
      INSERT INTO accounts (id, name, plan, created_at, clock_anchor_real, clock_anchor_virtual, clock_speed)
        VALUES ('acct_1', 'A', 'growth', 0, 0, 0, 1);
      INSERT INTO jobs (id, account_id, kind, subject, payload, due_at, state, created_at) VALUES
        ('job_1', 'acct_1', 'tracking.step', 'lbl_1', '{"labelId":"lbl_1","index":1}', 1000, 'pending', 0),
        ('job_2', 'acct_1', 'tracking.step', 'lbl_1', '{"labelId":"lbl_1","index":2}', 2000, 'pending', 0);
    `);
    const jobs = db.prepare('SELECT * FROM jobs ORDER BY seq').all();
    db.exec(LEGACY_MIGRATIONS[at] as string);
    expect(db.prepare('SELECT * FROM jobs ORDER BY seq').all()).toEqual(jobs);
    db.prepare('INSERT INTO tracking_plans (seed, scenario) VALUES (?, ?)').run(
      'fixed',
      '{"name":"standard"}',
    );
    expect(() =>
      db
        .prepare('INSERT INTO tracking_plans (seed, scenario) VALUES (?, ?)')
        .run('fixed', '{"name":"standard"}'),
    ).toThrow(/UNIQUE/);
    db.close();
  });
});
