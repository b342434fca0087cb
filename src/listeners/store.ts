import type { Sql } from '../db/sql.js';
import type { EventType } from '../events/schema.js';
import type { DeliveryErrorKind } from '../webhooks/send.js';

/** A listen session: one `shipping-sandbox listen` and the connection it keeps (see migrations.ts). */
export interface SessionRecord {
  id: string;
  accountId: string;
  /** Where the command forwards deliveries; null when it only prints them. */
  forwardTo: string | null;
  events: EventType[];
  /** When it was opened, on the account's clock. */
  connectedAt: number;
  /** The connection that holds it now (any process's), or null while it has none. */
  holder: string | null;
  /** Wall clock: the last sign of life from the command (a connection, a heartbeat answered, an outcome). */
  seenAt: number;
  /** Wall clock: when its last connection closed; null while one holds it. */
  closedAt: number | null;
  /** Wall clock: when it ended; null while it is open. */
  endedAt: number | null;
}

export type ListenerAttemptStatus = 'scheduled' | 'sending' | 'succeeded' | 'failed';

/** Why an attempt through a session failed: the webhooks' reasons, or the session ended first. */
export type ListenerErrorKind = DeliveryErrorKind | 'listener_gone';

export interface ListenerAttemptRecord {
  seq: number;
  id: string;
  accountId: string;
  sessionId: string;
  eventId: string;
  eventType: EventType;
  attempt: number;
  /** `sending`: handed to the session, waiting for the command to report the answer. */
  status: ListenerAttemptStatus;
  scheduledAt: number;
  sentAt: number | null;
  responseStatus: number | null;
  responseExcerpt: string | null;
  durationMs: number | null;
  error: ListenerErrorKind | null;
  errorMessage: string | null;
  nextAttemptAt: number | null;
}

/** What the command reported for one attempt. */
export interface AttemptOutcome {
  ok: boolean;
  responseStatus: number | null;
  responseExcerpt: string | null;
  durationMs: number;
  error: ListenerErrorKind | null;
  errorMessage: string | null;
}

interface SessionRow {
  id: string;
  account_id: string;
  forward_to: string | null;
  events: string;
  connected_at: number;
  holder: string | null;
  seen_at: number;
  closed_at: number | null;
  ended_at: number | null;
}

interface AttemptRow {
  seq: number;
  id: string;
  account_id: string;
  session_id: string;
  event_id: string;
  event_type: EventType;
  attempt: number;
  status: ListenerAttemptStatus;
  scheduled_at: number;
  sent_at: number | null;
  response_status: number | null;
  response_excerpt: string | null;
  duration_ms: number | null;
  error: ListenerErrorKind | null;
  error_message: string | null;
  next_attempt_at: number | null;
}

const toSession = (row: SessionRow): SessionRecord => ({
  id: row.id,
  accountId: row.account_id,
  forwardTo: row.forward_to,
  events: JSON.parse(row.events) as EventType[],
  connectedAt: row.connected_at,
  holder: row.holder,
  seenAt: row.seen_at,
  closedAt: row.closed_at,
  endedAt: row.ended_at,
});

const toAttempt = (row: AttemptRow): ListenerAttemptRecord => ({
  seq: row.seq,
  id: row.id,
  accountId: row.account_id,
  sessionId: row.session_id,
  eventId: row.event_id,
  eventType: row.event_type,
  attempt: row.attempt,
  status: row.status,
  scheduledAt: row.scheduled_at,
  sentAt: row.sent_at,
  responseStatus: row.response_status,
  responseExcerpt: row.response_excerpt,
  durationMs: row.duration_ms,
  error: row.error,
  errorMessage: row.error_message,
  nextAttemptAt: row.next_attempt_at,
});

/** `?, ?, ?` for a list of `count` values. */
const placeholders = (count: number) => Array.from({ length: count }, () => '?').join(', ');

const SQL = {
  insertSecret:
    'INSERT INTO listener_secrets (account_id, secret) VALUES (?, ?) ON CONFLICT (account_id) DO NOTHING',
  selectSecret: 'SELECT secret FROM listener_secrets WHERE account_id = ?',
  insertSession: `INSERT INTO listener_sessions (id, account_id, forward_to, events, connected_at, seen_at, closed_at)
    VALUES (@id, @accountId, @forwardTo, @events, @connectedAt, @now, @now)`,
  selectSession: 'SELECT * FROM listener_sessions WHERE id = ? AND account_id = ?',
  selectOpen: 'SELECT * FROM listener_sessions WHERE account_id = ? AND ended_at IS NULL ORDER BY seq DESC',
  countOpen: 'SELECT count(*) FROM listener_sessions WHERE account_id = ? AND ended_at IS NULL',
  attach: `UPDATE listener_sessions SET holder = @holder, seen_at = @now, closed_at = NULL
    WHERE id = @id AND account_id = @accountId AND ended_at IS NULL`,
  detach: 'UPDATE listener_sessions SET holder = NULL, closed_at = @now WHERE id = @id AND holder = @holder',
  seen: `UPDATE listener_sessions SET seen_at = @now
    WHERE id = @id AND account_id = @accountId AND ended_at IS NULL`,
  // Read through listener_sessions_open: the open sessions, a few per account at most.
  expired: `SELECT id FROM listener_sessions WHERE ended_at IS NULL
    AND (closed_at <= @closedBefore OR (closed_at IS NULL AND seen_at <= @silentBefore))`,
  end: 'UPDATE listener_sessions SET ended_at = @now, holder = NULL WHERE id = @id AND ended_at IS NULL',
  failPending: `UPDATE listener_attempts SET status = 'failed', error = 'listener_gone', error_message = @message,
      next_attempt_at = NULL
    WHERE session_id = @id AND status IN ('scheduled', 'sending')`,
  insertAttempt: `INSERT INTO listener_attempts (id, account_id, session_id, event_id, event_type, attempt, status,
      scheduled_at)
    VALUES (@id, @accountId, @sessionId, @eventId, @eventType, @attempt, 'scheduled', @scheduledAt)`,
  // The three below read the partial index listener_attempts_due, which holds the scheduled attempts only.
  selectDue: `SELECT * FROM listener_attempts WHERE status = 'scheduled' AND account_id = ? AND scheduled_at <= ?
    ORDER BY scheduled_at, seq LIMIT 1`,
  selectEarliestDue: `SELECT account_id, min(scheduled_at) AS due_at FROM listener_attempts
    WHERE status = 'scheduled' GROUP BY account_id`,
  selectScheduled: `SELECT * FROM listener_attempts WHERE status = 'scheduled' AND account_id = ?
    ORDER BY scheduled_at, seq LIMIT ?`,
  // Only while its session is open: an attempt of an ended one fails instead (see `failGone`).
  markSending: `UPDATE listener_attempts SET status = 'sending', sent_at = scheduled_at
    WHERE id = ? AND status = 'scheduled' AND EXISTS (
      SELECT 1 FROM listener_sessions s WHERE s.id = listener_attempts.session_id AND s.ended_at IS NULL)`,
  failGone: `UPDATE listener_attempts SET status = 'failed', error = 'listener_gone', error_message = ?
    WHERE id = ? AND status = 'scheduled'`,
  // An answer the account's command still owes: handed to a session that a connection holds.
  countAwaited: `SELECT count(*) FROM listener_sessions s JOIN listener_attempts a ON a.session_id = s.id
    WHERE s.account_id = ? AND s.ended_at IS NULL AND s.holder IS NOT NULL AND a.status = 'sending'`,
  recordOutcome: `UPDATE listener_attempts SET status = @status, response_status = @responseStatus,
      response_excerpt = @responseExcerpt, duration_ms = @durationMs, error = @error,
      error_message = @errorMessage, next_attempt_at = @nextAttemptAt
    WHERE id = @id AND status = 'sending'`,
  selectAttempt: 'SELECT * FROM listener_attempts WHERE id = ? AND session_id = ?',
  selectAttempts: 'SELECT * FROM listener_attempts WHERE session_id = ? ORDER BY seq DESC LIMIT ?',
  deleteAccount: ['listener_attempts', 'listener_sessions', 'listener_secrets'].map(
    (table) => `DELETE FROM ${table} WHERE account_id = ?`,
  ),
};

/**
 * Over PostgreSQL, read with each event's INSERT (`EventStore.subscribe`): whether the event's account
 * has a session open, as `selectOpen` would find one.
 */
export const ANY_OPEN_SESSION =
  'EXISTS (SELECT 1 FROM listener_sessions s WHERE s.account_id = events.account_id AND s.ended_at IS NULL)';

/**
 * The listen sessions, their attempts and the accounts' listen secrets. Each method runs on the `q`
 * it is given: the database, or the transaction of the change it is part of.
 */
export class ListenerStore {
  /** The account's secret, made by the first caller to ask (two at once keep the first one written). */
  async secret(q: Sql, accountId: string, made: string): Promise<string> {
    const kept = await q.value<string>(SQL.selectSecret, [accountId]);
    if (kept !== undefined) return kept;
    await q.run(SQL.insertSecret, [accountId, made]);
    return (await q.value<string>(SQL.selectSecret, [accountId])) ?? made;
  }

  async insertSession(
    tx: Sql,
    session: Pick<SessionRecord, 'id' | 'accountId' | 'forwardTo' | 'events' | 'connectedAt'>,
    now: number,
  ): Promise<void> {
    await tx.run(SQL.insertSession, { ...session, events: JSON.stringify(session.events), now });
  }

  async find(q: Sql, accountId: string, id: string): Promise<SessionRecord | undefined> {
    const row = await q.get<SessionRow>(SQL.selectSession, [id, accountId]);
    return row && toSession(row);
  }

  /** The account's sessions that have not ended, newest first. */
  async open(q: Sql, accountId: string): Promise<SessionRecord[]> {
    return (await q.all<SessionRow>(SQL.selectOpen, [accountId])).map(toSession);
  }

  /** How many of the account's sessions have not ended (its cap, core/caps.ts). */
  async openCount(q: Sql, accountId: string): Promise<number> {
    return Number(await q.value<number | string>(SQL.countOpen, [accountId]));
  }

  /** Sessions by id (those that still exist), whichever account they belong to. */
  async byIds(q: Sql, ids: readonly string[]): Promise<SessionRecord[]> {
    if (ids.length === 0) return [];
    const text = `SELECT * FROM listener_sessions WHERE id IN (${placeholders(ids.length)})`;
    return (await q.all<SessionRow>(text, ids)).map(toSession);
  }

  /** The connection `holder` takes the session over: false when it has ended or is not the account's. */
  async attach(q: Sql, accountId: string, id: string, holder: string, now: number): Promise<boolean> {
    return (await q.run(SQL.attach, { id, accountId, holder, now })) === 1;
  }

  /** The connection `holder` closed; a newer connection that took the session over keeps it. */
  async detach(q: Sql, id: string, holder: string, now: number): Promise<void> {
    await q.run(SQL.detach, { id, holder, now });
  }

  /** A sign of life from the command: false when the session has ended. */
  async seen(q: Sql, accountId: string, id: string, now: number): Promise<boolean> {
    return (await q.run(SQL.seen, { id, accountId, now })) === 1;
  }

  /** Open sessions whose connection closed at or before `closedBefore`, or that fell silent. */
  expired(q: Sql, bounds: { closedBefore: number; silentBefore: number }): Promise<string[]> {
    return q.column<string>(SQL.expired, bounds);
  }

  /** Ends the session and fails what it still owed: false when another process ended it first. */
  async end(tx: Sql, id: string, now: number, message: string): Promise<boolean> {
    if ((await tx.run(SQL.end, { id, now })) === 0) return false;
    await tx.run(SQL.failPending, { id, message });
    return true;
  }

  async insertAttempt(
    tx: Sql,
    attempt: Pick<
      ListenerAttemptRecord,
      'id' | 'accountId' | 'sessionId' | 'eventId' | 'eventType' | 'attempt' | 'scheduledAt'
    >,
  ): Promise<void> {
    await tx.run(SQL.insertAttempt, attempt);
  }

  async nextDue(q: Sql, accountId: string, until: number): Promise<ListenerAttemptRecord | undefined> {
    const row = await q.get<AttemptRow>(SQL.selectDue, [accountId, until]);
    return row && toAttempt(row);
  }

  async scheduled(q: Sql, accountId: string, limit: number): Promise<ListenerAttemptRecord[]> {
    return (await q.all<AttemptRow>(SQL.selectScheduled, [accountId, limit])).map(toAttempt);
  }

  async earliestDue(q: Sql): Promise<{ accountId: string; dueAt: number }[]> {
    return (await q.all<{ account_id: string; due_at: number }>(SQL.selectEarliestDue)).map((row) => ({
      accountId: row.account_id,
      dueAt: Number(row.due_at),
    }));
  }

  /** Hands a due attempt to its session: false when it was no longer scheduled or the session ended. */
  async markSending(tx: Sql, id: string): Promise<boolean> {
    return (await tx.run(SQL.markSending, [id])) === 1;
  }

  /** Fails a scheduled attempt whose session ended: false when it was no longer scheduled. */
  async failGone(tx: Sql, id: string, message: string): Promise<boolean> {
    return (await tx.run(SQL.failGone, [message, id])) === 1;
  }

  /** The attempts handed to these sessions and not answered yet, oldest first. */
  async sending(q: Sql, sessionIds: readonly string[]): Promise<ListenerAttemptRecord[]> {
    if (sessionIds.length === 0) return [];
    const text = `SELECT * FROM listener_attempts WHERE status = 'sending'
      AND session_id IN (${placeholders(sessionIds.length)}) ORDER BY seq`;
    return (await q.all<AttemptRow>(text, sessionIds)).map(toAttempt);
  }

  /** Whether a command holding one of the account's sessions owes the answer to an attempt. */
  async answersOwed(q: Sql, accountId: string): Promise<number> {
    return Number(await q.value(SQL.countAwaited, [accountId]));
  }

  /** Writes the outcome of an attempt still `sending`: false when it already had one. */
  async recordOutcome(
    tx: Sql,
    id: string,
    outcome: AttemptOutcome,
    nextAttemptAt: number | null,
  ): Promise<boolean> {
    const { ok, ...answer } = outcome;
    const changed = await tx.run(SQL.recordOutcome, {
      id,
      status: ok ? 'succeeded' : 'failed',
      ...answer,
      nextAttemptAt,
    });
    return changed === 1;
  }

  async findAttempt(q: Sql, sessionId: string, id: string): Promise<ListenerAttemptRecord | undefined> {
    const row = await q.get<AttemptRow>(SQL.selectAttempt, [id, sessionId]);
    return row && toAttempt(row);
  }

  async attempts(q: Sql, sessionId: string, limit: number): Promise<ListenerAttemptRecord[]> {
    return (await q.all<AttemptRow>(SQL.selectAttempts, [sessionId, limit])).map(toAttempt);
  }

  async deleteAccount(tx: Sql, accountId: string): Promise<void> {
    for (const statement of SQL.deleteAccount) await tx.run(statement, [accountId]);
  }
}
