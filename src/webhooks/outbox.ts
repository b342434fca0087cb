import type { Logger } from 'pino';
import { newId } from '../core/ids.js';
import { formatTimestamp } from '../core/time.js';
import type { Sql } from '../db/sql.js';
import type { RecordedEvent } from '../events/store.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { AttemptRecord, AttemptStore } from './attempt-store.js';
import { fanOutInChunks } from './fan-out.js';
import type { DeliveryResult } from './send.js';
import type { WebhookRecord, WebhookStore } from './store.js';

export interface WebhookOutboxDeps {
  store: WebhookStore;
  attempts: AttemptStore;
  scheduler: Scheduler;
  /** Milliseconds before each retry of the account's deliveries (read through `q`). */
  retryLadderOf: (q: Sql, accountId: string) => Promise<readonly number[]>;
  logger: Logger;
}

/**
 * The outbox's attempts: an event's first ones, written in the transaction that records the event,
 * and after each failed one the next on the account's clock, up the retry ladder, at whose end the
 * webhook is marked failed and its owner told.
 */
export class WebhookOutbox {
  constructor(private readonly deps: WebhookOutboxDeps) {}

  /**
   * Called inside the event's transaction, `tx`: one attempt per subscribed active webhook, due now,
   * in chunks between which other requests run (see fan-out.ts).
   */
  async fanOut(tx: Sql, event: RecordedEvent): Promise<void> {
    const subscribers = await this.deps.store.subscribers(tx, event.accountId, event.type);
    await fanOutInChunks(subscribers, async (webhook) => {
      await this.scheduleAttempt(tx, {
        accountId: event.accountId,
        webhookId: webhook.id,
        eventId: event.id,
        eventType: event.type,
        attempt: 0,
        dueAt: event.createdAt,
        now: event.createdAt,
      });
    });
  }

  /**
   * Writes the outcome; a failure schedules the next rung of the ladder, or fails the webhook. A manual
   * redelivery and a probe have an outcome and nothing more.
   */
  async settle(
    tx: Sql,
    attempt: AttemptRecord,
    result: DeliveryResult,
    sentAt: number,
    manual: boolean,
  ): Promise<void> {
    const { store, attempts } = this.deps;
    if (result.ok || manual || attempt.probe !== null) {
      await attempts.recordResult(tx, attempt.id, result, null);
      return;
    }
    const delay = (await this.deps.retryLadderOf(tx, attempt.accountId))[attempt.attempt];
    const webhook = await store.findById(tx, attempt.webhookId);
    const retries = delay !== undefined && webhook?.status === 'active';
    const dueAt = retries ? sentAt + delay : null;
    // Already written by another replica that took the send over: so were its consequences.
    if (!(await attempts.recordResult(tx, attempt.id, result, dueAt))) return;
    if (dueAt !== null) {
      await this.scheduleAttempt(tx, { ...attempt, attempt: attempt.attempt + 1, dueAt, now: sentAt });
      return;
    }
    if (delay === undefined && webhook?.status === 'active')
      await this.failWebhook(tx, webhook, attempt, result, sentAt);
  }

  private async scheduleAttempt(
    tx: Sql,
    attempt: Pick<AttemptRecord, 'accountId' | 'webhookId' | 'eventId' | 'eventType' | 'attempt'> & {
      dueAt: number;
      now: number;
    },
  ): Promise<void> {
    await this.deps.attempts.insertAttempt(tx, {
      id: newId('dlv', attempt.now),
      accountId: attempt.accountId,
      webhookId: attempt.webhookId,
      eventId: attempt.eventId,
      eventType: attempt.eventType,
      attempt: attempt.attempt,
      redelivery: false,
      scheduledAt: attempt.dueAt,
    });
    this.deps.scheduler.wakeFor(attempt.accountId, attempt.dueAt);
  }

  /** The specification: after the last retry fails, the webhook is marked failed and the owner is told once. */
  private async failWebhook(
    tx: Sql,
    webhook: WebhookRecord,
    attempt: AttemptRecord,
    result: DeliveryResult,
    at: number,
  ): Promise<void> {
    const { store, attempts, logger } = this.deps;
    // Two sends failing for good at once (on two replicas) fail the webhook, and write its e-mail, once.
    if (!(await store.failActive(tx, webhook.id))) return;
    await attempts.cancelPending(tx, webhook.id, 'the webhook was marked failed');
    await store.insertEmail(tx, {
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
    logger.warn({ webhook: webhook.id, url: webhook.url }, 'webhook marked failed');
  }
}
