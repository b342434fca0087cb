import type { Db } from '../db/database.js';
import type { TrackingStatus } from '../scenarios/vocabulary.js';

export interface TrackingEventRecord {
  status: TrackingStatus;
  description: string;
  location: string;
  occurredAt: number;
}

/** A label's tracking events (the `tracking_events` table). */
export class TrackingStore {
  private readonly insertEvent;
  private readonly selectEvents;
  private readonly countEvents;
  private readonly deleteAccountStatement;

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
}
