import type { Db } from '../db/database.js';
import type { Scenario } from '../scenarios/files.js';
import type { TrackingStatus } from '../scenarios/vocabulary.js';

export interface TrackingEventRecord {
  status: TrackingStatus;
  description: string;
  location: string;
  occurredAt: number;
}

/** What a label's scenario steps are planned from, besides the label itself: the seed and the scenario. */
export interface TrackingPlan {
  seed: string;
  scenario: Scenario;
}

/**
 * A label's tracking events (the `tracking_events` table), and the plans its pending steps are
 * derived from (`tracking_plans`, each stored once). A label keeps only its next step as a job, which
 * names its plan: the steps after it are derived again when it runs, from the seed and the scenario
 * as they were when the scenario started, so a restart with another `--seed` or an edited scenario
 * file changes no journey under way.
 */
export class TrackingStore {
  private readonly insertEvent;
  private readonly selectEvents;
  private readonly countEvents;
  private readonly deleteAccountStatement;
  private readonly findPlanStatement;
  private readonly insertPlanStatement;
  private readonly selectPlanStatement;

  constructor(db: Db) {
    this.insertEvent = db.prepare(
      `INSERT INTO tracking_events (account_id, label_id, status, description, location, occurred_at)
       VALUES (@accountId, @labelId, @status, @description, @location, @occurredAt)`,
    );
    this.selectEvents = db.prepare<
      [string],
      { status: TrackingStatus; description: string; location: string; occurred_at: number }
    >(
      // By time: a step that runs late (its account busy, the scheduler catching up) still takes its own place.
      `SELECT status, description, location, occurred_at FROM tracking_events WHERE label_id = ?
       ORDER BY occurred_at DESC, seq DESC`,
    );
    this.countEvents = db.prepare<[string], { n: number }>(
      'SELECT count(*) AS n FROM tracking_events WHERE label_id = ?',
    );
    this.deleteAccountStatement = db.prepare('DELETE FROM tracking_events WHERE account_id = ?');
    this.findPlanStatement = db
      .prepare<[string, string], number>('SELECT id FROM tracking_plans WHERE seed = ? AND scenario = ?')
      .pluck();
    this.insertPlanStatement = db.prepare('INSERT INTO tracking_plans (seed, scenario) VALUES (?, ?)');
    this.selectPlanStatement = db.prepare<[number], { seed: string; scenario: string }>(
      'SELECT seed, scenario FROM tracking_plans WHERE id = ?',
    );
  }

  append(accountId: string, labelId: string, event: TrackingEventRecord): void {
    this.insertEvent.run({ accountId, labelId, ...event });
  }

  /** Newest first: by occurred_at, then by the order they were recorded in. */
  events(labelId: string): TrackingEventRecord[] {
    return this.selectEvents.all(labelId).map((row) => ({
      status: row.status,
      description: row.description,
      location: row.location,
      occurredAt: row.occurred_at,
    }));
  }

  hasEvents(labelId: string): boolean {
    return (this.countEvents.get(labelId)?.n ?? 0) > 0;
  }

  deleteAccount(accountId: string): void {
    this.deleteAccountStatement.run(accountId);
  }

  /** The plan's id, stored now if it is new. Plans belong to no account: a reset keeps them. */
  planIdOf(plan: TrackingPlan): number {
    const scenario = JSON.stringify(plan.scenario);
    return (
      this.findPlanStatement.get(plan.seed, scenario) ??
      Number(this.insertPlanStatement.run(plan.seed, scenario).lastInsertRowid)
    );
  }

  plan(id: number): TrackingPlan | undefined {
    const row = this.selectPlanStatement.get(id);
    return row && { seed: row.seed, scenario: JSON.parse(row.scenario) as Scenario };
  }
}

/** What a label's scenario steps are planned from, besides the label itself: the seed and the scenario. */
export interface TrackingPlan {
  seed: string;
  scenario: Scenario;
}
