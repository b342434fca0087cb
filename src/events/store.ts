import { newId } from '../core/ids.js';
import type { JsonText } from '../core/json.js';
import { formatTimestamp } from '../core/time.js';
import { accountKeyOf } from '../db/account-keys.js';
import type { Db } from '../db/database.js';
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
export class EventStore {
  private readonly insert;
  private readonly selectRecent;
  private readonly selectRecentOfType;
  private readonly selectBody;
  private readonly deleteAccountStatement;
  private readonly subscribers: ((event: RecordedEvent) => void)[] = [];

  constructor(db: Db) {
    this.insert = db.prepare(
      `INSERT INTO events (id, account_id, account_key, type, created_at, body, packed)
       VALUES (@id, @accountId, ${accountKeyOf('@accountId')}, @type, @createdAt, '', @packed)`,
    );
    this.selectRecent = db.prepare<[string, number], StoredBody>(
      `SELECT ${STORED} FROM events WHERE account_key = ${accountKeyOf('?')} ORDER BY seq DESC LIMIT ?`,
    );
    this.selectRecentOfType = db.prepare<[string, string, number], StoredBody>(
      `SELECT ${STORED} FROM events WHERE account_key = ${accountKeyOf('?')} AND type = ?
       ORDER BY seq DESC LIMIT ?`,
    );
    this.selectBody = db.prepare<[string], StoredBody>(`SELECT ${STORED} FROM events WHERE id = ?`);
    // By the account's key, as the indexes are (migration 16).
    this.deleteAccountStatement = db.prepare(`DELETE FROM events WHERE account_key = ${accountKeyOf('?')}`);
  }

  /** Hears of every event recorded, inside the transaction that records it. */
  subscribe(subscriber: (event: RecordedEvent) => void): void {
    this.subscribers.push(subscriber);
  }

  /**
   * Records an event whose `data` is already JSON text (often the very text the API answers with), so
   * the envelope is written around it rather than serialised again. `announce: false` keeps it from
   * the subscribers: a webhook probe's test event goes to the one webhook probed, not to every one.
   */
  record(
    accountId: string,
    type: EventType,
    data: JsonText<unknown>,
    now: number,
    { announce = true }: { announce?: boolean } = {},
  ): RecordedEvent {
    const id = newId('evt', now);
    const body = `{"id":${JSON.stringify(id)},"event":${JSON.stringify(type)},"created_at":${JSON.stringify(
      formatTimestamp(now),
    )},"data":${data}}` as JsonText<EventEnvelope>;
    this.insert.run({
      id,
      accountId,
      type,
      createdAt: now,
      packed: packEnvelope(body, { id, type, created_at: now }),
    });
    const event: RecordedEvent = { id, accountId, type, createdAt: now, body };
    if (announce) for (const subscriber of this.subscribers) subscriber(event);
    return event;
  }

  /** Newest first, as the list's JSON text: the stored envelopes side by side, never parsed. */
  listText(
    accountId: string,
    options: { type?: string | undefined; limit: number },
  ): JsonText<{ data: EventEnvelope[] }> {
    const rows = options.type
      ? this.selectRecentOfType.all(accountId, options.type, options.limit)
      : this.selectRecent.all(accountId, options.limit);
    return `{"data":[${rows.map(storedBody).join(',')}]}` as JsonText<{ data: EventEnvelope[] }>;
  }

  /** The event's envelope, byte for byte as first sent. */
  body(eventId: string): string | undefined {
    const row = this.selectBody.get(eventId);
    return row && storedBody(row);
  }

  deleteAccount(accountId: string): void {
    this.deleteAccountStatement.run(accountId);
  }
}
