import { type Page, type PagePosition, pageOf } from '../core/paging.js';
import { afterParams, afterPlace, newestFirst } from '../db/paging.js';
import { dialect, type Engine, type Sql } from '../db/sql.js';
import type { EventType } from '../events/schema.js';
import type { DeliveryErrorKind, DeliveryResult } from './send.js';

export type WebhookStatus = 'active' | 'failed' | 'disabled';

export interface WebhookRecord {
  id: string;
  accountId: string;
  url: string;
  events: EventType[];
  secret: string;
  status: WebhookStatus;
  createdAt: number;
}

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

interface WebhookRow {
  /** Only where a page reads it: the row's place among those of the same instant. */
  seq?: number;
  id: string;
  account_id: string;
  url: string;
  events: string;
  secret: string;
  status: WebhookStatus;
  created_at: number;
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

const toWebhook = (row: WebhookRow): WebhookRecord => ({
  id: row.id,
  accountId: row.account_id,
  url: row.url,
  events: JSON.parse(row.events) as EventType[],
  secret: row.secret,
  status: row.status,
  createdAt: row.created_at,
});

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

/** The statements of a page of the account's webhooks, newest first: SQLite's rowid is its `seq`. */
function pageStatements() {
  const page = (engine: 'sqlite' | 'postgres', afterCursor: boolean) => {
    const seq = engine === 'sqlite' ? 'rowid' : 'seq';
    const after = afterCursor ? ` AND ${afterPlace(seq)}` : '';
    return `SELECT *, ${seq} AS seq FROM webhooks WHERE account_id = @accountId AND deleted_at IS NULL${after}
      ${newestFirst(seq)} LIMIT @take`;
  };
  return {
    first: { sqlite: page('sqlite', false), postgres: page('postgres', false) },
    after: { sqlite: page('sqlite', true), postgres: page('postgres', true) },
  };
}

const SQL = {
  lastAttempt: 'SELECT max(attempt) AS n FROM webhook_attempts WHERE webhook_id = ? AND event_id = ?',
  cancelAttempt: "UPDATE webhook_attempts SET status = 'cancelled', error_message = @reason WHERE id = @id",
  markDeleted: "UPDATE webhooks SET deleted_at = ?, status = 'disabled' WHERE id = ?",
  selectAnyWebhook: 'SELECT * FROM webhooks WHERE id = ?',
  insertWebhook: `INSERT INTO webhooks (id, account_id, url, events, secret, status, created_at)
    VALUES (@id, @accountId, @url, @events, @secret, @status, @createdAt)`,
  updateWebhook:
    'UPDATE webhooks SET url = @url, events = @events, secret = @secret, status = @status WHERE id = @id',
  // Over PostgreSQL a second writer waits for the first's row, then finds it failed already.
  failActive: "UPDATE webhooks SET status = 'failed' WHERE id = ? AND status = 'active'",
  selectWebhook: 'SELECT * FROM webhooks WHERE id = ? AND account_id = ? AND deleted_at IS NULL',
  // Among webhooks made at the same instant, the later first: SQLite's rowid, PostgreSQL's seq.
  selectWebhooks: {
    sqlite:
      'SELECT * FROM webhooks WHERE account_id = ? AND deleted_at IS NULL ORDER BY created_at DESC, rowid DESC',
    postgres:
      'SELECT * FROM webhooks WHERE account_id = ? AND deleted_at IS NULL ORDER BY created_at DESC, seq DESC',
  },
  // Pages of the same order, one statement with a cursor's place and one without.
  selectPage: pageStatements(),
  countWebhooks: 'SELECT count(*) FROM webhooks WHERE account_id = ? AND deleted_at IS NULL',
  // `events` is a JSON array of names.
  selectSubscribers: {
    sqlite: `SELECT w.* FROM webhooks w, json_each(w.events) j
      WHERE w.account_id = @accountId AND w.status = 'active' AND w.deleted_at IS NULL AND j.value = @type
      ORDER BY w.created_at, w.rowid`,
    postgres: `SELECT w.* FROM webhooks w
      WHERE w.account_id = @accountId AND w.status = 'active' AND w.deleted_at IS NULL
        AND w.events::jsonb @> jsonb_build_array(CAST(@type AS TEXT))
      ORDER BY w.created_at, w.seq`,
  },
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
  selectSending: "SELECT id FROM webhook_attempts WHERE account_id = ? AND status = 'sending'",
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
  // Children first: requests, attempts and e-mails, then the webhooks they belong to.
  deleteAccount: ['webhook_requests', 'webhook_attempts', 'emails', 'webhooks'].map(
    (table) => `DELETE FROM ${table} WHERE account_id = ?`,
  ),
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
    sqlite: `UPDATE webhook_attempts SET status = 'scheduled', sent_at = NULL, sent_wall_at = NULL, claimed_by = NULL
      WHERE id = @id AND status = 'sending' AND claimed_by = @me`,
    postgres: `UPDATE webhook_attempts SET status = 'scheduled', sent_at = NULL, sent_wall_at = NULL, claimed_by = NULL,
        on_wire_until = NULL
      WHERE id = @id AND status = 'sending' AND claimed_by = @me`,
  },
  recordResult: `UPDATE webhook_attempts SET status = @status, response_status = @responseStatus,
      response_excerpt = @responseExcerpt, duration_ms = @durationMs, error = @error,
      error_message = @errorMessage, next_attempt_at = @nextAttemptAt
    WHERE id = @id AND status = 'sending'`,
  cancelPending: `UPDATE webhook_attempts SET status = 'cancelled', error_message = @reason
    WHERE webhook_id = @webhookId AND status = 'scheduled'`,
  insertEmail: `INSERT INTO emails (id, account_id, recipient, subject, body, created_at)
    VALUES (@id, @accountId, @recipient, @subject, @body, @createdAt)`,
  selectEmails:
    'SELECT id, recipient, subject, body, created_at FROM emails WHERE account_id = ? ORDER BY seq DESC LIMIT ?',
};

/**
 * Over PostgreSQL, read with each event's INSERT (`EventStore.subscribe`): whether any webhook of the
 * event's account takes its type, as `selectSubscribers` would find one.
 */
export const ANY_SUBSCRIBED_WEBHOOK = `EXISTS (SELECT 1 FROM webhooks w
  WHERE w.account_id = events.account_id AND w.status = 'active' AND w.deleted_at IS NULL
    AND w.events::jsonb @> jsonb_build_array(events.type))`;

/**
 * The webhooks, their delivery attempts and the e-mail outbox (`webhooks`, `webhook_attempts`,
 * `emails`). Each method runs on the `q` it is given: the database, or the transaction of the change
 * it is part of.
 */
export class WebhookStore {
  async insert(tx: Sql, webhook: WebhookRecord): Promise<WebhookRecord> {
    await tx.run(SQL.insertWebhook, { ...webhook, events: JSON.stringify(webhook.events) });
    return webhook;
  }

  async save(tx: Sql, webhook: WebhookRecord): Promise<void> {
    await tx.run(SQL.updateWebhook, { ...webhook, events: JSON.stringify(webhook.events) });
  }

  /** Marks an active webhook failed; false when it was not active (another send's failure got there first). */
  async failActive(tx: Sql, id: string): Promise<boolean> {
    return (await tx.run(SQL.failActive, [id])) > 0;
  }

  /**
   * Deleted webhooks keep their row, disabled, so a send still on the wire finds it and neither
   * retries nor alerts; the API no longer shows it.
   */
  async delete(tx: Sql, webhook: WebhookRecord, at: number): Promise<void> {
    await this.cancelPending(tx, webhook.id, 'the webhook was deleted');
    await tx.run(SQL.markDeleted, [at, webhook.id]);
  }

  async find(q: Sql, accountId: string, id: string): Promise<WebhookRecord | undefined> {
    const row = await q.get<WebhookRow>(SQL.selectWebhook, [id, accountId]);
    return row && toWebhook(row);
  }

  async findById(q: Sql, id: string): Promise<WebhookRecord | undefined> {
    const row = await q.get<WebhookRow>(SQL.selectAnyWebhook, [id]);
    return row && toWebhook(row);
  }

  async list(q: Sql, accountId: string): Promise<WebhookRecord[]> {
    return (await q.all<WebhookRow>(dialect(q, SQL.selectWebhooks), [accountId])).map(toWebhook);
  }

  /** One page of the account's webhooks, newest first, after `after` when given. */
  async page(
    q: Sql,
    accountId: string,
    limit: number,
    after: PagePosition | undefined,
  ): Promise<Page<WebhookRecord>> {
    const statement = dialect(q, after ? SQL.selectPage.after : SQL.selectPage.first);
    const rows = await q.all<WebhookRow>(statement, { accountId, take: limit + 1, ...afterParams(after) });
    const page = pageOf(rows, limit, (row) => ({ createdAt: Number(row.created_at), seq: Number(row.seq) }));
    return { ...page, rows: page.rows.map(toWebhook) };
  }

  /** How many webhooks the account has (deleted ones are gone from it). */
  async count(q: Sql, accountId: string): Promise<number> {
    return Number(await q.value<number>(SQL.countWebhooks, [accountId]));
  }

  /** Active webhooks of the account that subscribe to this event, oldest first. */
  async subscribers(q: Sql, accountId: string, type: EventType): Promise<WebhookRecord[]> {
    return (await q.all<WebhookRow>(dialect(q, SQL.selectSubscribers), { accountId, type })).map(toWebhook);
  }

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

  /** The account's attempts being sent, by any replica. */
  sendingIds(q: Sql, accountId: string): Promise<string[]> {
    return q.column<string>(SQL.selectSending, [accountId]);
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
  async requeue(q: Sql, id: string, me: string): Promise<void> {
    await q.run(dialect(q, SQL.requeue), { id, me });
  }

  async cancelAttempt(tx: Sql, id: string, reason: string): Promise<void> {
    await tx.run(SQL.cancelAttempt, { id, reason });
  }

  async cancelPending(tx: Sql, webhookId: string, reason: string): Promise<void> {
    await tx.run(SQL.cancelPending, { webhookId, reason });
  }

  async insertEmail(
    tx: Sql,
    email: {
      id: string;
      accountId: string;
      recipient: string;
      subject: string;
      body: string;
      createdAt: number;
    },
  ): Promise<void> {
    await tx.run(SQL.insertEmail, email);
  }

  emails(q: Sql, accountId: string, limit: number) {
    return q.all<{ id: string; recipient: string; subject: string; body: string; created_at: number }>(
      SQL.selectEmails,
      [accountId, limit],
    );
  }

  async deleteAccount(tx: Sql, accountId: string): Promise<void> {
    for (const statement of SQL.deleteAccount) await tx.run(statement, [accountId]);
  }
}
