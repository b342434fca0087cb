import pLimit from 'p-limit';
import type { Logger } from 'pino';
import type { AccountStore } from '../accounts/store.js';
import type { Job, Scheduler } from '../clock/scheduler.js';
import type { Config } from '../config.js';
import { newId } from '../core/ids.js';
import { formatTimestamp } from '../core/time.js';
import type { Db } from '../db/database.js';
import { transaction } from '../db/database.js';
import type { EventEnvelope } from '../events/store.js';
import { type DeliveryResult, sendDelivery } from './send.js';
import type { AttemptRecord, WebhookRecord, WebhookStore } from './store.js';

/** The scheduler's job kind: one delivery attempt falls due. */
export const WEBHOOK_ATTEMPT = 'webhook.attempt';

/**
 * Sends on the wire at once, across all webhooks, and to any one webhook. A receiver that hangs holds
 * at most its own share for the timeout; its other sends queue behind it, not in front of everyone's.
 */
const MAX_CONCURRENT_SENDS = 64;
const MAX_CONCURRENT_SENDS_PER_WEBHOOK = 4;

/**
 * Webhook delivery: the outbox and its dispatcher.
 *
 * An event's attempts are written in the transaction that records the event, each with a job due at
 * once; the job starts the send and returns, so a slow receiver never holds up the scheduler, the
 * API or other receivers. The outcome is written when the receiver answers (or times out), and a
 * failure schedules the next attempt on the account's clock. An attempt is `sending` while on the
 * wire; one left `sending` by a crash is sent again at start, so nothing is lost and nothing is
 * marked delivered without a 2xx.
 */
export class WebhookDelivery {
  private readonly limit = pLimit(MAX_CONCURRENT_SENDS);
  private readonly perWebhook = new Map<string, ReturnType<typeof pLimit>>();
  private readonly inFlight = new Map<string, Set<Promise<unknown>>>();

  constructor(
    private readonly db: Db,
    private readonly store: WebhookStore,
    private readonly accounts: AccountStore,
    private readonly scheduler: Scheduler,
    private readonly config: Config,
    private readonly logger: Logger,
  ) {}

  /** Called inside the event's transaction: one attempt per subscribed active webhook, due now. */
  fanOut(accountId: string, envelope: EventEnvelope, now: number): void {
    for (const webhook of this.store.subscribers(accountId, envelope.event)) {
      this.scheduleAttempt({
        accountId,
        webhookId: webhook.id,
        eventId: envelope.id,
        attempt: 0,
        dueAt: now,
        now,
      });
    }
  }

  private scheduleAttempt(attempt: {
    accountId: string;
    webhookId: string;
    eventId: string;
    attempt: number;
    dueAt: number;
    now: number;
  }): string {
    const id = newId('dlv', attempt.now);
    this.store.insertAttempt({ ...attempt, id, redelivery: false, scheduledAt: attempt.dueAt });
    this.scheduler.schedule({
      accountId: attempt.accountId,
      kind: WEBHOOK_ATTEMPT,
      subject: id,
      payload: { attemptId: id },
      dueAt: attempt.dueAt,
      now: attempt.now,
    });
    return id;
  }

  /** The job handler: starts the send, stamped with the job's due time, and returns at once. */
  onDue(job: Job<{ attemptId: string }>) {
    const attempt = this.store.findAttempt(job.payload.attemptId);
    if (attempt?.status !== 'scheduled') return { skipped: true };
    const webhook = this.store.findById(attempt.webhookId);
    if (webhook?.status !== 'active') {
      this.store.cancelPending(attempt.webhookId, 'the webhook is not active');
      return { skipped: true };
    }
    this.store.startSending(attempt.id, job.dueAt);
    this.track(attempt.accountId, this.send(attempt, webhook, job.dueAt));
    return { webhook_id: webhook.id, event_id: attempt.eventId, attempt: attempt.attempt };
  }

  /** Resolves once every send of the account that is on the wire now has its outcome written. */
  async settled(accountId: string): Promise<void> {
    for (let sends = this.inFlight.get(accountId); sends?.size; sends = this.inFlight.get(accountId)) {
      await Promise.allSettled([...sends]);
    }
  }

  /** At start: attempts that were on the wire when the process stopped are sent again. */
  resumeInterrupted(): void {
    for (const attempt of this.store.interrupted()) {
      const webhook = this.store.findById(attempt.webhookId);
      // A manual redelivery goes out whatever the webhook's status; anything else only to an active one.
      if (!webhook || (webhook.status !== 'active' && !attempt.redelivery)) {
        this.store.cancelAttempt(attempt.id, 'the webhook is not active');
        continue;
      }
      this.logger.info({ attempt: attempt.id }, 'resending a delivery interrupted by a restart');
      const sentAt = attempt.sentAt ?? attempt.scheduledAt;
      this.track(attempt.accountId, this.send(attempt, webhook, sentAt, { manual: attempt.redelivery }));
    }
  }

  /**
   * `POST /_sandbox/deliveries/:id/redeliver`: the same bytes once more, now, as a new attempt. A
   * manual redelivery neither retries nor changes the webhook's status.
   */
  async redeliver(original: AttemptRecord, now: number): Promise<AttemptRecord> {
    const webhook = this.store.findById(original.webhookId);
    if (!webhook) throw new Error(`webhook ${original.webhookId} is gone`);
    const id = newId('dlv', now);
    this.store.insertAttempt({
      id,
      accountId: original.accountId,
      webhookId: original.webhookId,
      eventId: original.eventId,
      attempt: this.store.lastAttemptNumber(original.webhookId, original.eventId) + 1,
      redelivery: true,
      scheduledAt: now,
    });
    this.store.startSending(id, now);
    const attempt = this.store.findAttempt(id) as AttemptRecord;
    await this.track(attempt.accountId, this.send(attempt, webhook, now, { manual: true }));
    return this.store.findAttempt(id) as AttemptRecord;
  }

  private track(accountId: string, send: Promise<unknown>): Promise<unknown> {
    let sends = this.inFlight.get(accountId);
    if (!sends) {
      sends = new Set();
      this.inFlight.set(accountId, sends);
    }
    sends.add(send);
    const done = send.finally(() => {
      sends.delete(send);
      if (sends.size === 0 && this.inFlight.get(accountId) === sends) this.inFlight.delete(accountId);
    });
    return done;
  }

  private async send(
    attempt: AttemptRecord,
    webhook: WebhookRecord,
    sentAt: number,
    options = { manual: false },
  ) {
    const body = this.store.eventBody(attempt.eventId);
    if (body === undefined) return;
    const result = await this.throttled(webhook.id, () =>
      sendDelivery({
        url: webhook.url,
        secret: webhook.secret,
        body,
        eventId: attempt.eventId,
        attempt: attempt.attempt,
        timeoutMs: this.config.webhookTimeoutMs,
      }),
    );
    try {
      transaction(this.db, () => this.settle(attempt, result, sentAt, options.manual));
    } catch (error) {
      // The database may be closing under a stopping server; the attempt stays `sending` and is resent.
      this.logger.error({ err: error, attempt: attempt.id }, 'could not record a delivery outcome');
    }
  }

  /** Runs `send` within the webhook's own share first, then within the global one. */
  private async throttled<T>(webhookId: string, send: () => Promise<T>): Promise<T> {
    let own = this.perWebhook.get(webhookId);
    if (!own) {
      own = pLimit(MAX_CONCURRENT_SENDS_PER_WEBHOOK);
      this.perWebhook.set(webhookId, own);
    }
    try {
      return await own(() => this.limit(send));
    } finally {
      if (own.activeCount === 0 && own.pendingCount === 0) this.perWebhook.delete(webhookId);
    }
  }

  /** Writes the outcome; a failure schedules the next rung of the ladder, or fails the webhook. */
  private settle(attempt: AttemptRecord, result: DeliveryResult, sentAt: number, manual: boolean): void {
    if (result.ok || manual) {
      this.store.recordResult(attempt.id, result, null);
      return;
    }
    const ladder = this.retryLadder(attempt.accountId);
    const delay = ladder[attempt.attempt];
    const webhook = this.store.findById(attempt.webhookId);
    if (delay !== undefined && webhook?.status === 'active') {
      const dueAt = sentAt + delay;
      this.store.recordResult(attempt.id, result, dueAt);
      this.scheduleAttempt({ ...attempt, attempt: attempt.attempt + 1, dueAt, now: sentAt });
      return;
    }
    this.store.recordResult(attempt.id, result, null);
    if (delay === undefined && webhook?.status === 'active')
      this.failWebhook(webhook, attempt, result, sentAt);
  }

  /** The specification: after the last retry fails, the webhook is marked failed and the owner is told once. */
  private failWebhook(
    webhook: WebhookRecord,
    attempt: AttemptRecord,
    result: DeliveryResult,
    at: number,
  ): void {
    this.store.save({ ...webhook, status: 'failed' });
    this.store.cancelPending(webhook.id, 'the webhook was marked failed');
    this.store.insertEmail({
      id: newId('eml', at),
      accountId: webhook.accountId,
      recipient: `owner@${webhook.accountId.toLowerCase()}.sandbox.invalid`,
      subject: `Webhook ${webhook.id} was marked failed`,
      body: [
        `Deliveries to ${webhook.url} failed ${attempt.attempt + 1} times in a row for event ${attempt.eventId}`,
        `(${attempt.eventType}); the last try, at ${formatTimestamp(at)}, ended with: ${result.errorMessage ?? result.error}.`,
        '',
        'The webhook is now marked failed and receives no new events.',
        `Fix the receiver, then set it active again: PATCH /v1/webhooks/${webhook.id} {"status": "active"}.`,
      ].join('\n'),
      createdAt: at,
    });
    this.logger.warn({ webhook: webhook.id, url: webhook.url }, 'webhook marked failed');
  }

  /** Milliseconds before each retry: the account's own ladder, or the server's. */
  retryLadder(accountId: string): readonly number[] {
    return this.accounts.find(accountId)?.webhookRetrySchedule ?? this.config.webhookRetries;
  }
}
