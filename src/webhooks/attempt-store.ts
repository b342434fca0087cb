import { dialect, type Engine, type Sql } from '../db/sql.js';
import type { EventType } from '../events/schema.js';
import type { DeliveryErrorKind, DeliveryResult } from './send.js';

export type AttemptStatus = 'scheduled' | 'sending' | 'succeeded' | 'failed' | 'cancelled';

/** What a probe attempt sends: a correctly signed delivery, or one with a wrong signature. */
export type ProbeSignature = 'genuine' | 'forged';

export interface AttemptRecord {
  seq: number;
  id: string;
  accountId: string;
  webhookId: string;
  eventId: string;
  eventType: EventType;
  attempt: number;
  redelivery: boolean;
  /** Set on the two attempts of a probe (`POST /_sandbox/webhooks/:id/probe`); null on every other. */
  probe: ProbeSignature | null;
  status: AttemptStatus;
  scheduledAt: number;
  sentAt: number | null;
  /** When it went out by the wall clock (null before it did, and for attempts older than the column). */
  sentWallAt: number | null;
  responseStatus: number | null;
  responseExcerpt: string | null;
  durationMs: number | null;
  error: DeliveryErrorKind | null;
  errorMessage: string | null;
  nextAttemptAt: number | null;
}

interface AttemptRow {
  seq: number;
  id: string;
  account_id: string;
  webhook_id: string;
  event_id: string;
  event_type: EventType;
  attempt: number;
  redelivery: number;
  probe: ProbeSignature | null;
  status: AttemptStatus;
  scheduled_at: number;
  sent_at: number | null;
  sent_wall_at: number | null;
  response_status: number | null;
  response_excerpt: string | null;
  duration_ms: number | null;
  error: DeliveryErrorKind | null;
  error_message: string | null;
  next_attempt_at: number | null;
}

const toAttempt = (row: AttemptRow): AttemptRecord => ({
  seq: row.seq,
  id: row.id,
  accountId: row.account_id,
  webhookId: row.webhook_id,
  eventId: row.event_id,
  eventType: row.event_type,
  attempt: row.attempt,
  redelivery: row.redelivery === 1,
  probe: row.probe,
  status: row.status,
  scheduledAt: row.scheduled_at,
  sentAt: row.sent_at,
  sentWallAt: row.sent_wall_at,
  responseStatus: row.response_status,
  responseExcerpt: row.response_excerpt,
  durationMs: row.duration_ms,
  error: row.error,
  errorMessage: row.error_message,
  nextAttemptAt: row.next_attempt_at,
});

/** An attempt being sent, as an advance over PostgreSQL sees it (`AttemptStore.sending`). */
export interface SendingAttempt {
  id: string;
  /** Claimed by the replica that asked. */
  mine: boolean;
  /** The slot on the wire its sender took has ended. */
  slotOver: boolean;
}

const SQL = {
  lastAttempt: 'SELECT max(attempt) AS n FROM webhook_attempts WHERE webhook_id = ? AND event_id = ?',
  cancelAttempt: "UPDATE webhook_attempts SET status = 'cancelled', error_message = @reason WHERE id = @id",
  insertAttempt: `INSERT INTO webhook_attempts (id, account_id, webhook_id, event_id, event_type, attempt, redelivery, probe,
      status, scheduled_at, sent_at, sent_wall_at, claimed_by)
    VALUES (@id, @accountId, @webhookId, @eventId, @eventType, @attempt, @redelivery, @probe, @status,
      @scheduledAt, @sentAt, @sentWallAt, @claimedBy)`,
  selectAttempt: 'SELECT * FROM webhook_attempts WHERE id = ?',
  selectAttempts: 'SELECT * FROM webhook_attempts WHERE webhook_id = ? ORDER BY seq DESC LIMIT ?',
  selectAccountWebhooks: 'SELECT id FROM webhooks WHERE account_id = ?',
  // `@holderAlive` is SQL: whether the replica in `claimed_by` still runs (scheduler/replicas.ts).
  // Over PostgreSQL a claim also forgets the slot on the wire the attempt's last sender held (see
  // send-limits.ts): the new claimant takes its own, and until then the attempt counts against no share.
  claimAbandoned: (holderAlive: string, oneAccount: boolean, engine: Engine) => `UPDATE webhook_attempts
    SET claimed_by = @me${engine === 'postgres' ? ', on_wire_until = NULL' : ''}
    WHERE status = 'sending' AND (claimed_by IS NULL OR NOT ${holderAlive})${oneAccount ? ' AND account_id = @accountId' : ''}
    RETURNING *`,
  // PostgreSQL only: `on_wire_until` is the end of the slot its sender took (see send-limits.ts).
  selectSending: `SELECT id, coalesce(claimed_by = @me, false) AS mine,
      coalesce(on_wire_until <= clock_timestamp(), false) AS slot_over
    FROM webhook_attempts WHERE account_id = @accountId AND status = 'sending'`,
  releaseClaim:
    "UPDATE webhook_attempts SET claimed_by = NULL WHERE id = @id AND status = 'sending' AND claimed_by = @me",
  // Both read the partial index webhook_attempts_due, which holds the scheduled attempts only.
  selectDue: `SELECT * FROM webhook_attempts WHERE status = 'scheduled' AND account_id = ? AND scheduled_at <= ?
    ORDER BY scheduled_at, seq LIMIT 1`,
  // Each of the account's webhooks' earliest due attempt: a probe of webhook_attempts_due_by_webhook
  // per webhook (at most 100), however many attempts of one webhook wait ahead of the others'.
  selectDueByWebhook: `SELECT a.* FROM webhooks w
    JOIN webhook_attempts a ON a.seq = (
      SELECT d.seq FROM webhook_attempts d
       WHERE d.webhook_id = w.id AND d.status = 'scheduled' AND d.scheduled_at <= @until
       ORDER BY d.scheduled_at, d.seq LIMIT 1)
    WHERE w.account_id = @accountId AND w.deleted_at IS NULL`,
  selectEarliestDue: `SELECT account_id, min(scheduled_at) AS due_at FROM webhook_attempts WHERE status = 'scheduled'
    GROUP BY account_id`,
  selectScheduled: `SELECT * FROM webhook_attempts WHERE status = 'scheduled' AND account_id = ?
    ORDER BY scheduled_at, seq LIMIT ?`,
  insertRequest: `INSERT INTO webhook_requests (attempt_id, account_id, url, signature)
    SELECT id, account_id, @url, @signature FROM webhook_attempts WHERE id = @attemptId
    ON CONFLICT (attempt_id) DO UPDATE SET url = excluded.url, signature = excluded.signature`,
  selectRequest: 'SELECT url, signature FROM webhook_requests WHERE attempt_id = ?',
  markSending: {
    sqlite: `UPDATE webhook_attempts SET status = 'sending', sent_at = @sentAt, sent_wall_at = @sentWallAt,
        claimed_by = @me
      WHERE id = @id AND status = 'scheduled'`,
    postgres: `UPDATE webhook_attempts SET status = 'sending', sent_at = @sentAt, sent_wall_at = @sentWallAt,
        claimed_by = @me, on_wire_until = NULL
      WHERE id = @id AND status = 'scheduled'`,
  },
  // Back in the queue, unsent: claimed again when the webhook has room (WebhookDelivery.takeOverAbandoned).
  // Over PostgreSQL its slot on the wire goes too, so that it counts against no share once claimed again.
  requeue: {
    sqlite: `UPDATE webhook_attempts SET status = 'scheduled', sent_at = NULL, sent_wall_at = NULL, claimed_by = NULL,
        scheduled_at = coalesce(@scheduledAt, scheduled_at)
      WHERE id = @id AND status = 'sending' AND claimed_by = @me`,
    postgres: `UPDATE webhook_attempts SET status = 'scheduled', sent_at = NULL, sent_wall_at = NULL, claimed_by = NULL,
        on_wire_until = NULL, scheduled_at = coalesce(@scheduledAt, scheduled_at)
      WHERE id = @id AND status = 'sending' AND claimed_by = @me`,
  },
  recordResult: `UPDATE webhook_attempts SET status = @status, response_status = @responseStatus,
      response_excerpt = @responseExcerpt, duration_ms = @durationMs, error = @error,
      error_message = @errorMessage, next_attempt_at = @nextAttemptAt
    WHERE id = @id AND status = 'sending'`,
  cancelPending: `UPDATE webhook_attempts SET status = 'cancelled', error_message = @reason
    WHERE webhook_id = @webhookId AND status = 'scheduled'`,
  // Children first: the requests, then the attempts they belong to.
  deleteAccount: ['webhook_requests', 'webhook_attempts'].map(
    (table) => `DELETE FROM ${table} WHERE account_id = ?`,
  ),
};

/**
 * The webhooks' delivery attempts (`webhook_attempts`) and the requests they made (`webhook_requests`):
 * each attempt's life from `scheduled` through `sending` (claimed by the replica sending it) to its
 * outcome. Each method runs on the `q` it is given: the database, or the transaction of the change it
 * is part of.
 */
export class AttemptStore {
  /**
   * A new attempt: `scheduled` for its due time, or (a manual redelivery, a probe) `sending` at once,
   * at the wall-clock instant `sendingNow` gives.
   */
  async insertAttempt(
    tx: Sql,
    attempt: {
      id: string;
      accountId: string;
      webhookId: string;
      eventId: string;
      eventType: EventType;
      attempt: number;
      redelivery: boolean;
      probe?: ProbeSignature;
      scheduledAt: number;
      /** When it went out by the wall clock, and the replica sending it. */
      sendingNow?: { wallAt: number; by: string };
    },
  ): Promise<void> {
    const { sendingNow, ...columns } = attempt;
    await tx.run(SQL.insertAttempt, {
      ...columns,
      redelivery: attempt.redelivery ? 1 : 0,
      probe: attempt.probe ?? null,
      status: sendingNow ? 'sending' : 'scheduled',
      sentAt: sendingNow ? attempt.scheduledAt : null,
      sentWallAt: sendingNow ? sendingNow.wallAt : null,
      claimedBy: sendingNow ? sendingNow.by : null,
    });
  }

  /** The account's earliest scheduled attempt due at or before `until`. */
  async nextDue(q: Sql, accountId: string, until: number): Promise<AttemptRecord | undefined> {
    const row = await q.get<AttemptRow>(SQL.selectDue, [accountId, until]);
    return row && toAttempt(row);
  }

  /**
   * The account's earliest scheduled attempt due at or before `until` of a webhook not in `skipped`:
   * `nextDue` for when some webhooks must wait (their sends are held up: WebhookDelivery).
   */
  async nextDueSkipping(
    q: Sql,
    accountId: string,
    until: number,
    skipped: ReadonlySet<string>,
  ): Promise<AttemptRecord | undefined> {
    let first: AttemptRow | undefined;
    for (const row of await q.all<AttemptRow>(SQL.selectDueByWebhook, { accountId, until })) {
      if (skipped.has(row.webhook_id)) continue;
      if (
        !first ||
        row.scheduled_at < first.scheduled_at ||
        (row.scheduled_at === first.scheduled_at && row.seq < first.seq)
      )
        first = row;
    }
    return first && toAttempt(first);
  }

  /** The account's first `limit` scheduled attempts, soonest first. */
  async scheduled(q: Sql, accountId: string, limit: number): Promise<AttemptRecord[]> {
    return (await q.all<AttemptRow>(SQL.selectScheduled, [accountId, limit])).map(toAttempt);
  }

  /** Every account with scheduled attempts, and its earliest due time. */
  async earliestDue(q: Sql): Promise<{ accountId: string; dueAt: number }[]> {
    return (await q.all<{ account_id: string; due_at: number }>(SQL.selectEarliestDue)).map((row) => ({
      accountId: row.account_id,
      dueAt: Number(row.due_at),
    }));
  }

  async findAttempt(q: Sql, id: string): Promise<AttemptRecord | undefined> {
    const row = await q.get<AttemptRow>(SQL.selectAttempt, [id]);
    return row && toAttempt(row);
  }

  async attempts(q: Sql, webhookId: string, limit: number): Promise<AttemptRecord[]> {
    return (await q.all<AttemptRow>(SQL.selectAttempts, [webhookId, limit])).map(toAttempt);
  }

  /**
   * The account's most recent attempts across its webhooks (deleted ones included), newest first. Each
   * webhook's are read through its own index, at most `limit` of them, so the cost follows the
   * account's own webhooks, never the whole table.
   */
  async recentAttempts(q: Sql, accountId: string, limit: number): Promise<AttemptRecord[]> {
    const webhookIds = await q.column<string>(SQL.selectAccountWebhooks, [accountId]);
    const lists = await Promise.all(
      webhookIds.map((webhookId) => q.all<AttemptRow>(SQL.selectAttempts, [webhookId, limit])),
    );
    return lists
      .flat()
      .sort((a, b) => b.seq - a.seq)
      .slice(0, limit)
      .map(toAttempt);
  }

  async lastAttemptNumber(q: Sql, webhookId: string, eventId: string): Promise<number> {
    return (await q.get<{ n: number | null }>(SQL.lastAttempt, [webhookId, eventId]))?.n ?? -1;
  }

  /**
   * Claims for replica `me` the attempts left `sending` by a sender that is gone: one whose replica
   * stopped beating (`holderAlive`, SQL over `claimed_by`), or any at all at the start of the one
   * process over SQLite (`holderAlive` FALSE). Of replicas claiming at once, one gets each attempt.
   */
  async claimAbandoned(
    q: Sql,
    me: string,
    holderAlive: string,
    accountId?: string,
  ): Promise<AttemptRecord[]> {
    const sql = SQL.claimAbandoned(holderAlive, accountId !== undefined, q.engine);
    const rows = await q.all<AttemptRow>(sql, { me, ...(accountId === undefined ? {} : { accountId }) });
    return rows.map(toAttempt).sort((a, b) => a.seq - b.seq);
  }

  /**
   * The account's attempts being sent, by any replica (PostgreSQL): whether replica `me` claimed each,
   * and whether the slot on the wire its sender took is over, by which time its send has ended.
   */
  async sending(q: Sql, accountId: string, me: string): Promise<SendingAttempt[]> {
    const rows = await q.all<{ id: string; mine: boolean; slot_over: boolean }>(SQL.selectSending, {
      accountId,
      me,
    });
    return rows.map((row) => ({ id: row.id, mine: row.mine, slotOver: row.slot_over }));
  }

  /** Gives back an attempt that replica `me` claimed and could not take over: the next take-over claims it. */
  async releaseClaim(q: Sql, id: string, me: string): Promise<void> {
    await q.run(SQL.releaseClaim, { id, me });
  }

  /** Claims a scheduled attempt for replica `me` to send: false when another got it first. */
  async startSending(tx: Sql, id: string, sentAt: number, sentWallAt: number, me: string): Promise<boolean> {
    return (await tx.run(dialect(tx, SQL.markSending), { id, sentAt, sentWallAt, me })) === 1;
  }

  async recordResult(
    tx: Sql,
    id: string,
    result: DeliveryResult,
    nextAttemptAt: number | null,
  ): Promise<boolean> {
    const written = await tx.run(SQL.recordResult, {
      id,
      status: result.ok ? 'succeeded' : 'failed',
      responseStatus: result.responseStatus,
      responseExcerpt: result.responseExcerpt,
      durationMs: result.durationMs,
      error: result.error,
      errorMessage: result.errorMessage,
      nextAttemptAt,
    });
    // Not `sending` any more: another replica took the attempt over from one it thought dead, and
    // its outcome stands.
    if (written === 0) return false;
    if (result.sent) await tx.run(SQL.insertRequest, { attemptId: id, ...result.sent });
    return true;
  }

  /** The URL and signature an attempt was sent with, once it was. */
  sentRequest(q: Sql, attemptId: string): Promise<{ url: string; signature: string } | undefined> {
    return q.get<{ url: string; signature: string }>(SQL.selectRequest, [attemptId]);
  }

  /** Puts an attempt that replica `me` claimed but did not send back among the scheduled ones. */
  /** Puts an attempt replica `me` is sending back among the scheduled ones, due as before or at `scheduledAt`. */
  async requeue(q: Sql, id: string, me: string, scheduledAt?: number): Promise<void> {
    await q.run(dialect(q, SQL.requeue), { id, me, scheduledAt });
  }

  async cancelAttempt(tx: Sql, id: string, reason: string): Promise<void> {
    await tx.run(SQL.cancelAttempt, { id, reason });
  }

  async cancelPending(tx: Sql, webhookId: string, reason: string): Promise<void> {
    await tx.run(SQL.cancelPending, { webhookId, reason });
  }

  async deleteAccount(tx: Sql, accountId: string): Promise<void> {
    for (const statement of SQL.deleteAccount) await tx.run(statement, [accountId]);
  }
}
