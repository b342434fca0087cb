import type { Db } from '../db/database.js';
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

/** The webhooks, their delivery attempts and the e-mail outbox (`webhooks`, `webhook_attempts`, `emails`). */
export class WebhookStore {
  private readonly insertWebhook;
  private readonly updateWebhook;
  private readonly selectWebhook;
  private readonly selectWebhooks;
  private readonly selectSubscribers;
  private readonly insertAttemptStatement;
  private readonly selectAttempt;
  private readonly selectAttempts;
  private readonly selectAccountWebhooks;
  private readonly selectInterrupted;
  private readonly markSending;
  private readonly recordResultStatement;
  private readonly cancelPendingStatement;
  private readonly insertEmailStatement;
  private readonly selectEmails;
  private readonly markDeleted;
  private readonly cancelAttemptStatement;
  private readonly selectLastAttempt;
  private readonly selectAnyWebhook;
  private readonly selectDue;
  private readonly selectEarliestDue;
  private readonly deleteStatements;
  private readonly selectScheduled;
  private readonly insertRequestStatement;
  private readonly selectRequest;

  constructor(db: Db) {
    this.selectLastAttempt = db.prepare<[string, string], { n: number | null }>(
      'SELECT max(attempt) AS n FROM webhook_attempts WHERE webhook_id = ? AND event_id = ?',
    );
    this.cancelAttemptStatement = db.prepare(
      "UPDATE webhook_attempts SET status = 'cancelled', error_message = @reason WHERE id = @id",
    );
    this.markDeleted = db.prepare("UPDATE webhooks SET deleted_at = ?, status = 'disabled' WHERE id = ?");
    this.selectAnyWebhook = db.prepare<[string], WebhookRow>('SELECT * FROM webhooks WHERE id = ?');
    this.insertWebhook = db.prepare(
      `INSERT INTO webhooks (id, account_id, url, events, secret, status, created_at)
       VALUES (@id, @accountId, @url, @events, @secret, @status, @createdAt)`,
    );
    this.updateWebhook = db.prepare(
      'UPDATE webhooks SET url = @url, events = @events, secret = @secret, status = @status WHERE id = @id',
    );
    this.selectWebhook = db.prepare<[string, string], WebhookRow>(
      'SELECT * FROM webhooks WHERE id = ? AND account_id = ? AND deleted_at IS NULL',
    );
    this.selectWebhooks = db.prepare<[string], WebhookRow>(
      'SELECT * FROM webhooks WHERE account_id = ? AND deleted_at IS NULL ORDER BY created_at DESC, rowid DESC',
    );
    this.selectSubscribers = db.prepare<[string, string], WebhookRow>(
      `SELECT w.* FROM webhooks w, json_each(w.events) j
       WHERE w.account_id = ? AND w.status = 'active' AND w.deleted_at IS NULL AND j.value = ?
       ORDER BY w.created_at, w.rowid`,
    );
    this.insertAttemptStatement = db.prepare(
      `INSERT INTO webhook_attempts (id, account_id, webhook_id, event_id, event_type, attempt, redelivery, probe,
         status, scheduled_at, sent_at, sent_wall_at)
       VALUES (@id, @accountId, @webhookId, @eventId, @eventType, @attempt, @redelivery, @probe, @status,
         @scheduledAt, @sentAt, @sentWallAt)`,
    );
    this.selectAttempt = db.prepare<[string], AttemptRow>('SELECT * FROM webhook_attempts WHERE id = ?');
    this.selectAttempts = db.prepare<[string, number], AttemptRow>(
      'SELECT * FROM webhook_attempts WHERE webhook_id = ? ORDER BY seq DESC LIMIT ?',
    );
    this.selectAccountWebhooks = db
      .prepare<[string], string>('SELECT id FROM webhooks WHERE account_id = ?')
      .pluck();
    this.selectInterrupted = db.prepare<[], AttemptRow>(
      "SELECT * FROM webhook_attempts WHERE status = 'sending' ORDER BY seq",
    );
    // Both read the partial index webhook_attempts_due, which holds the scheduled attempts only.
    this.selectDue = db.prepare<[string, number], AttemptRow>(
      `SELECT * FROM webhook_attempts WHERE status = 'scheduled' AND account_id = ? AND scheduled_at <= ?
       ORDER BY scheduled_at, seq LIMIT 1`,
    );
    this.selectEarliestDue = db.prepare<[], { account_id: string; due_at: number }>(
      `SELECT account_id, min(scheduled_at) AS due_at FROM webhook_attempts WHERE status = 'scheduled'
       GROUP BY account_id`,
    );
    this.selectScheduled = db.prepare<[string, number], AttemptRow>(
      `SELECT * FROM webhook_attempts WHERE status = 'scheduled' AND account_id = ?
       ORDER BY scheduled_at, seq LIMIT ?`,
    );
    this.insertRequestStatement = db.prepare(
      `INSERT OR REPLACE INTO webhook_requests (attempt_id, account_id, url, signature)
       SELECT id, account_id, @url, @signature FROM webhook_attempts WHERE id = @attemptId`,
    );
    this.selectRequest = db.prepare<[string], { url: string; signature: string }>(
      'SELECT url, signature FROM webhook_requests WHERE attempt_id = ?',
    );
    // Children first: requests, attempts and e-mails, then the webhooks they belong to.
    this.deleteStatements = ['webhook_requests', 'webhook_attempts', 'emails', 'webhooks'].map((table) =>
      db.prepare(`DELETE FROM ${table} WHERE account_id = ?`),
    );
    this.markSending = db.prepare(
      "UPDATE webhook_attempts SET status = 'sending', sent_at = @sentAt, sent_wall_at = @sentWallAt WHERE id = @id",
    );
    this.recordResultStatement = db.prepare(
      `UPDATE webhook_attempts SET status = @status, response_status = @responseStatus,
         response_excerpt = @responseExcerpt, duration_ms = @durationMs, error = @error,
         error_message = @errorMessage, next_attempt_at = @nextAttemptAt
       WHERE id = @id`,
    );
    this.cancelPendingStatement = db.prepare(
      `UPDATE webhook_attempts SET status = 'cancelled', error_message = @reason
       WHERE webhook_id = @webhookId AND status = 'scheduled'`,
    );
    this.insertEmailStatement = db.prepare(
      `INSERT INTO emails (id, account_id, recipient, subject, body, created_at)
       VALUES (@id, @accountId, @recipient, @subject, @body, @createdAt)`,
    );
    this.selectEmails = db.prepare<
      [string, number],
      { id: string; recipient: string; subject: string; body: string; created_at: number }
    >(
      'SELECT id, recipient, subject, body, created_at FROM emails WHERE account_id = ? ORDER BY seq DESC LIMIT ?',
    );
  }

  insert(webhook: WebhookRecord): WebhookRecord {
    this.insertWebhook.run({ ...webhook, events: JSON.stringify(webhook.events) });
    return webhook;
  }

  save(webhook: WebhookRecord): void {
    this.updateWebhook.run({ ...webhook, events: JSON.stringify(webhook.events) });
  }

  /**
   * Deleted webhooks keep their row, disabled, so a send still on the wire finds it and neither
   * retries nor alerts; the API no longer shows it.
   */
  delete(webhook: WebhookRecord, at: number): void {
    this.cancelPending(webhook.id, 'the webhook was deleted');
    this.markDeleted.run(at, webhook.id);
  }

  find(accountId: string, id: string): WebhookRecord | undefined {
    const row = this.selectWebhook.get(id, accountId);
    return row && toWebhook(row);
  }

  findById(id: string): WebhookRecord | undefined {
    const row = this.selectAnyWebhook.get(id);
    return row && toWebhook(row);
  }

  list(accountId: string): WebhookRecord[] {
    return this.selectWebhooks.all(accountId).map(toWebhook);
  }

  /** Active webhooks of the account that subscribe to this event, oldest first. */
  subscribers(accountId: string, type: EventType): WebhookRecord[] {
    return this.selectSubscribers.all(accountId, type).map(toWebhook);
  }

  /**
   * A new attempt: `scheduled` for its due time, or (a manual redelivery, a probe) `sending` at once,
   * at the wall-clock instant `sendingNow` gives.
   */
  insertAttempt(attempt: {
    id: string;
    accountId: string;
    webhookId: string;
    eventId: string;
    eventType: EventType;
    attempt: number;
    redelivery: boolean;
    probe?: ProbeSignature;
    scheduledAt: number;
    sendingNow?: { wallAt: number };
  }): void {
    const { sendingNow, ...columns } = attempt;
    this.insertAttemptStatement.run({
      ...columns,
      redelivery: attempt.redelivery ? 1 : 0,
      probe: attempt.probe ?? null,
      status: sendingNow ? 'sending' : 'scheduled',
      sentAt: sendingNow ? attempt.scheduledAt : null,
      sentWallAt: sendingNow ? sendingNow.wallAt : null,
    });
  }

  /** The account's earliest scheduled attempt due at or before `until`. */
  nextDue(accountId: string, until: number): AttemptRecord | undefined {
    const row = this.selectDue.get(accountId, until);
    return row && toAttempt(row);
  }

  /** The account's first `limit` scheduled attempts, soonest first. */
  scheduled(accountId: string, limit: number): AttemptRecord[] {
    return this.selectScheduled.all(accountId, limit).map(toAttempt);
  }

  /** Every account with scheduled attempts, and its earliest due time. */
  earliestDue(): { accountId: string; dueAt: number }[] {
    return this.selectEarliestDue.all().map((row) => ({ accountId: row.account_id, dueAt: row.due_at }));
  }

  findAttempt(id: string): AttemptRecord | undefined {
    const row = this.selectAttempt.get(id);
    return row && toAttempt(row);
  }

  attempts(webhookId: string, limit: number): AttemptRecord[] {
    return this.selectAttempts.all(webhookId, limit).map(toAttempt);
  }

  /**
   * The account's most recent attempts across its webhooks (deleted ones included), newest first. Each
   * webhook's are read through its own index, at most `limit` of them, so the cost follows the
   * account's own webhooks, never the whole table.
   */
  recentAttempts(accountId: string, limit: number): AttemptRecord[] {
    return this.selectAccountWebhooks
      .all(accountId)
      .flatMap((webhookId) => this.selectAttempts.all(webhookId, limit))
      .sort((a, b) => b.seq - a.seq)
      .slice(0, limit)
      .map(toAttempt);
  }

  lastAttemptNumber(webhookId: string, eventId: string): number {
    return this.selectLastAttempt.get(webhookId, eventId)?.n ?? -1;
  }

  /** Attempts that were on the wire when the process stopped. */
  interrupted(): AttemptRecord[] {
    return this.selectInterrupted.all().map(toAttempt);
  }

  startSending(id: string, sentAt: number, sentWallAt: number): void {
    this.markSending.run({ id, sentAt, sentWallAt });
  }

  recordResult(id: string, result: DeliveryResult, nextAttemptAt: number | null): void {
    this.recordResultStatement.run({
      id,
      status: result.ok ? 'succeeded' : 'failed',
      responseStatus: result.responseStatus,
      responseExcerpt: result.responseExcerpt,
      durationMs: result.durationMs,
      error: result.error,
      errorMessage: result.errorMessage,
      nextAttemptAt,
    });
    if (result.sent) this.insertRequestStatement.run({ attemptId: id, ...result.sent });
  }

  /** The URL and signature an attempt was sent with, once it was. */
  sentRequest(attemptId: string): { url: string; signature: string } | undefined {
    return this.selectRequest.get(attemptId);
  }

  cancelAttempt(id: string, reason: string): void {
    this.cancelAttemptStatement.run({ id, reason });
  }

  cancelPending(webhookId: string, reason: string): void {
    this.cancelPendingStatement.run({ webhookId, reason });
  }

  insertEmail(email: {
    id: string;
    accountId: string;
    recipient: string;
    subject: string;
    body: string;
    createdAt: number;
  }): void {
    this.insertEmailStatement.run(email);
  }

  emails(accountId: string, limit: number) {
    return this.selectEmails.all(accountId, limit);
  }

  deleteAccount(accountId: string): void {
    for (const statement of this.deleteStatements) statement.run(accountId);
  }
}
