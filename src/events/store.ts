import { newId } from '../core/ids.js';
import { formatTimestamp } from '../core/time.js';
import type { Db } from '../db/database.js';
import { packBody, storedBody } from './packing.js';

/** The event names of the specification. */
export const EVENT_TYPES = [
  'shipment.created',
  'shipment.cancelled',
  'label.generated',
  'label.voided',
  'tracking.updated',
  'tracking.delivered',
  'tracking.exception',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

type StoredBody = { body: string; packed: Buffer | null };

/** The envelope of the specification, exactly as a webhook receiver gets it. */
export interface EventEnvelope {
  id: string;
  event: EventType;
  created_at: string;
  data: unknown;
}

/**
 * The account's event log. Callers record events inside the transaction of the change that caused
 * them, so an answered change always has its event and a failed one never does.
 */
export class EventStore {
  private readonly insert;
  private readonly selectRecent;
  private readonly selectRecentOfType;

  constructor(db: Db) {
    this.insert = db.prepare(
      `INSERT INTO events (id, account_id, type, created_at, body, packed)
       VALUES (@id, @accountId, @type, @createdAt, '', @packed)`,
    );
    this.selectRecent = db.prepare<[string, number], StoredBody>(
      'SELECT body, packed FROM events WHERE account_id = ? ORDER BY seq DESC LIMIT ?',
    );
    this.selectRecentOfType = db.prepare<[string, string, number], StoredBody>(
      'SELECT body, packed FROM events WHERE account_id = ? AND type = ? ORDER BY seq DESC LIMIT ?',
    );
  }

  /** Who else must hear of each event, in the same transaction: the webhook outbox. */
  private listener: ((accountId: string, envelope: EventEnvelope, now: number) => void) | undefined;

  onRecorded(listener: (accountId: string, envelope: EventEnvelope, now: number) => void): void {
    this.listener = listener;
  }

  record(accountId: string, type: EventType, data: unknown, now: number): EventEnvelope {
    const envelope: EventEnvelope = {
      id: newId('evt', now),
      event: type,
      created_at: formatTimestamp(now),
      data,
    };
    // Serialised once: these exact bytes are what every webhook and every retry sends (stored
    // deflated, see packing.ts).
    const packed = packBody(JSON.stringify(envelope));
    this.insert.run({ id: envelope.id, accountId, type, createdAt: now, packed });
    this.listener?.(accountId, envelope, now);
    return envelope;
  }

  /** Newest first. */
  list(accountId: string, options: { type?: string | undefined; limit: number }): EventEnvelope[] {
    const rows = options.type
      ? this.selectRecentOfType.all(accountId, options.type, options.limit)
      : this.selectRecent.all(accountId, options.limit);
    return rows.map((row) => JSON.parse(storedBody(row)) as EventEnvelope);
  }
}
