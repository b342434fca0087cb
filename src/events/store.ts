import { newId } from '../core/ids.js';
import type { JsonText } from '../core/json.js';
import { formatTimestamp } from '../core/time.js';
import { accountKeyOf } from '../db/account-keys.js';
import type { Sql } from '../db/sql.js';
import { packEnvelope, storedBody } from './packing.js';
import type { EventEnvelope, EventType } from './schema.js';

/** What an envelope is read back from: format 2 needs the row's id, type and time (packing.ts). */
type StoredBody = { id: string; type: string; created_at: number; body: string; packed: Buffer | null };

const STORED = 'id, type, created_at, body, packed';

/** An event as recorded: its envelope's exact bytes, which every webhook and every retry sends. */
export interface RecordedEvent {
  id: string;
  accountId: string;
  type: EventType;
  createdAt: number;
  body: JsonText<EventEnvelope>;
}

/**
 * The account's event log (the `events` table). Callers record events inside the transaction of the
 * change that caused them, so an answered change always has its event and a failed one never does;
 * subscribers (the webhook outbox) hear of each event in that same transaction.
 */
const SQL = {
  insert: `INSERT INTO events (id, account_id, account_key, type, created_at, body, packed)
    VALUES (@id, @accountId, ${accountKeyOf('@accountId')}, @type, @createdAt, '', @packed)`,
  selectRecent: `SELECT ${STORED} FROM events WHERE account_key = ${accountKeyOf('?')} ORDER BY seq DESC LIMIT ?`,
  selectRecentOfType: `SELECT ${STORED} FROM events WHERE account_key = ${accountKeyOf('?')} AND type = ?
    ORDER BY seq DESC LIMIT ?`,
  selectBody: `SELECT ${STORED} FROM events WHERE id = ?`,
  // By the account's key, as the indexes are.
  deleteAccount: `DELETE FROM events WHERE account_key = ${accountKeyOf('?')}`,
};

/** Hears of an event inside the transaction that records it (`tx`), and writes what it causes there. */
export type EventSubscriber = (tx: Sql, event: RecordedEvent) => Promise<void>;

export class EventStore {
  private readonly subscribers: { hear: EventSubscriber; interest: string | undefined }[] = [];
  private insert = SQL.insert;

  constructor(private readonly db: Sql) {}

  /**
   * Hears of every event recorded, inside the transaction that records it. `interest`, when given, is
   * an SQL condition over the new row (`events.account_id`, `events.type`) that is false when the
   * subscriber would find nothing to do with the event (no webhook of the account takes its type).
   * Over PostgreSQL it is read in the event's own INSERT, and the subscriber is not called when it is
   * false: an event nobody listens to (most of them) costs no round trip of each subscriber's own,
   * as faults are read with the caller's key. Over SQLite, where a read costs no round trip, every
   * subscriber hears of every event.
   */
  subscribe(subscriber: EventSubscriber, interest?: string): void {
    this.subscribers.push({ hear: subscriber, interest });
    if (this.db.engine !== 'postgres') return;
    const interests = this.subscribers.map(({ interest }, i) => `(${interest ?? 'true'}) AS interest_${i}`);
    this.insert = `${SQL.insert} RETURNING ${interests.join(', ')}`;
  }

  /**
   * Records an event whose `data` is already JSON text (often the very text the API answers with), so
   * the envelope is written around it rather than serialised again, through `tx`, the transaction of
   * the change that caused it. `announce: false` keeps it from the subscribers: a webhook probe's test
   * event goes to the one webhook probed, not to every one.
   */
  async record(
    tx: Sql,
    accountId: string,
    type: EventType,
    data: JsonText<unknown>,
    now: number,
    { announce = true }: { announce?: boolean } = {},
  ): Promise<RecordedEvent> {
    const id = newId('evt', now);
    const body = `{"id":${JSON.stringify(id)},"event":${JSON.stringify(type)},"created_at":${JSON.stringify(
      formatTimestamp(now),
    )},"data":${data}}` as JsonText<EventEnvelope>;
    const row = {
      id,
      accountId,
      type,
      createdAt: now,
      packed: packEnvelope(body, { id, type, created_at: now }),
    };
    let interested: Record<string, boolean> | undefined;
    // An event kept from the subscribers asks none of them whether they would hear it.
    if (!announce || this.insert === SQL.insert) await tx.run(SQL.insert, row);
    else interested = await tx.get<Record<string, boolean>>(this.insert, row);
    const event: RecordedEvent = { id, accountId, type, createdAt: now, body };
    if (!announce) return event;
    for (const [i, { hear }] of this.subscribers.entries())
      if (interested?.[`interest_${i}`] !== false) await hear(tx, event);
    return event;
  }

  /** Newest first, as the list's JSON text: the stored envelopes side by side, never parsed. */
  async listText(
    accountId: string,
    options: { type?: string | undefined; limit: number },
  ): Promise<JsonText<{ data: EventEnvelope[] }>> {
    const rows = options.type
      ? await this.db.all<StoredBody>(SQL.selectRecentOfType, [accountId, options.type, options.limit])
      : await this.db.all<StoredBody>(SQL.selectRecent, [accountId, options.limit]);
    return `{"data":[${rows.map(storedBody).join(',')}]}` as JsonText<{ data: EventEnvelope[] }>;
  }

  /** The event's envelope, byte for byte as first sent. */
  async body(q: Sql, eventId: string): Promise<string | undefined> {
    const row = await q.get<StoredBody>(SQL.selectBody, [eventId]);
    return row && storedBody(row);
  }

  async deleteAccount(tx: Sql, accountId: string): Promise<void> {
    await tx.run(SQL.deleteAccount, [accountId]);
  }
}
