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
  private readonly subscribers: EventSubscriber[] = [];

  constructor(private readonly db: Sql) {}

  /** Hears of every event recorded, inside the transaction that records it. */
  subscribe(subscriber: EventSubscriber): void {
    this.subscribers.push(subscriber);
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
    await tx.run(SQL.insert, {
      id,
      accountId,
      type,
      createdAt: now,
      packed: packEnvelope(body, { id, type, created_at: now }),
    });
    const event: RecordedEvent = { id, accountId, type, createdAt: now, body };
    if (announce) for (const subscriber of this.subscribers) await subscriber(tx, event);
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
