import type { Sql } from '../db/sql.js';
import type { Scenario } from '../scenarios/files.js';
import type { TrackingStatus } from '../scenarios/vocabulary.js';

export interface TrackingEventRecord {
  status: TrackingStatus;
  description: string;
  location: string;
  occurredAt: number;
}

/**
 * A label's tracking events (the `tracking_events` table), and the plans its pending steps are
 * derived from (`tracking_plans`, each stored once). A label keeps only its next step as a job, which
 * names its plan: the steps after it are derived again when it runs, from the seed and the scenario
 * as they were when the scenario started, so a restart with another `--seed` or an edited scenario
 * file changes no journey under way.
 */
export class TrackingStore {
  async append(tx: Sql, accountId: string, labelId: string, event: TrackingEventRecord): Promise<void> {
    await tx.run(SQL.insertEvent, { accountId, labelId, ...event });
  }

  /** Newest first: by occurred_at, then by the order they were recorded in. */
  async events(q: Sql, labelId: string): Promise<TrackingEventRecord[]> {
    const rows = await q.all<{
      status: TrackingStatus;
      description: string;
      location: string;
      occurred_at: number;
    }>(SQL.selectEvents, [labelId]);
    return rows.map((row) => ({
      status: row.status,
      description: row.description,
      location: row.location,
      occurredAt: row.occurred_at,
    }));
  }

  async hasEvents(q: Sql, labelId: string): Promise<boolean> {
    return (await q.get(SQL.anyEvent, [labelId])) !== undefined;
  }

  async deleteAccount(tx: Sql, accountId: string): Promise<void> {
    await tx.run(SQL.deleteAccount, [accountId]);
  }

  /**
   * The plan's id, stored now if it is new. Plans belong to no account: a reset keeps them. Replicas
   * starting together may both store one: the unique key keeps the first, and both read it.
   */
  async planIdOf(q: Sql, plan: TrackingPlan): Promise<number> {
    const scenario = JSON.stringify(plan.scenario);
    await q.run(SQL.insertPlan, [plan.seed, scenario]);
    return (await q.value<number>(SQL.findPlan, [plan.seed, scenario])) as number;
  }

  async plan(q: Sql, id: number): Promise<TrackingPlan | undefined> {
    const row = await q.get<{ seed: string; scenario: string }>(SQL.selectPlan, [id]);
    return row && { seed: row.seed, scenario: JSON.parse(row.scenario) as Scenario };
  }
}

const SQL = {
  insertEvent: `INSERT INTO tracking_events (account_id, label_id, status, description, location, occurred_at)
    VALUES (@accountId, @labelId, @status, @description, @location, @occurredAt)`,
  // By time: a step that runs late (its account busy, the scheduler catching up) still takes its own place.
  selectEvents: `SELECT status, description, location, occurred_at FROM tracking_events WHERE label_id = ?
    ORDER BY occurred_at DESC, seq DESC`,
  anyEvent: 'SELECT 1 AS one FROM tracking_events WHERE label_id = ? LIMIT 1',
  deleteAccount: 'DELETE FROM tracking_events WHERE account_id = ?',
  findPlan: 'SELECT id FROM tracking_plans WHERE seed = ? AND scenario = ?',
  insertPlan: 'INSERT INTO tracking_plans (seed, scenario) VALUES (?, ?) ON CONFLICT DO NOTHING',
  selectPlan: 'SELECT seed, scenario FROM tracking_plans WHERE id = ?',
};

/** What a label's scenario steps are planned from, besides the label itself: the seed and the scenario. */
export interface TrackingPlan {
  seed: string;
  scenario: Scenario;
}
