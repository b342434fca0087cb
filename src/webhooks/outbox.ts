import type { Logger } from 'pino';
import { newId } from '../core/ids.js';
import { formatTimestamp } from '../core/time.js';
import type { RecordedEvent } from '../events/store.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { DeliveryResult } from './send.js';
import type { AttemptRecord, WebhookRecord, WebhookStore } from './store.js';

export interface WebhookOutboxDeps {
  store: WebhookStore;
  scheduler: Scheduler;
  /** Milliseconds before each retry of the account's deliveries. */
  retryLadderOf: (accountId: string) => readonly number[];
  logger: Logger;
}

/**
 * The outbox's attempts: an event's first ones, written in the transaction that records the event,
 * and after each failed one the next on the account's clock, up the retry ladder, at whose end the
 * webhook is marked failed and its owner told.
 */
export class WebhookOutbox {
  constructor(private readonly deps: WebhookOutboxDeps) {}

  /** Called inside the event's transaction: one attempt per subscribed active webhook, due now. */
  fanOut(event: RecordedEvent): void {
    for (const webhook of this.deps.store.subscribers(event.accountId, event.type)) {
      this.scheduleAttempt({
        accountId: event.accountId,
        webhookId: webhook.id,
        eventId: event.id,
        eventType: event.type,
        attempt: 0,
        dueAt: event.createdAt,
        now: event.createdAt,
      });
    }
  }

  /**
   * Writes the outcome; a failure schedules the next rung of the ladder, or fails the webhook. A manual
   * redelivery and a probe have an outcome and nothing more.
   */
  settle(attempt: AttemptRecord, result: DeliveryResult, sentAt: number, manual: boolean): void {
    const { store } = this.deps;
    if (result.ok || manual || attempt.probe !== null) {
      store.recordResult(attempt.id, result, null);
      return;
    }
    const delay = this.deps.retryLadderOf(attempt.accountId)[attempt.attempt];
    const webhook = store.findById(attempt.webhookId);
    if (delay !== undefined && webhook?.status === 'active') {
      const dueAt = sentAt + delay;
      store.recordResult(attempt.id, result, dueAt);
      this.scheduleAttempt({ ...attempt, attempt: attempt.attempt + 1, dueAt, now: sentAt });
      return;
    }
    store.recordResult(attempt.id, result, null);
    if (delay === undefined && webhook?.status === 'active')
      this.failWebhook(webhook, attempt, result, sentAt);
  }

  private scheduleAttempt(
    attempt: Pick<AttemptRecord, 'accountId' | 'webhookId' | 'eventId' | 'eventType' | 'attempt'> & {
      dueAt: number;
      now: number;
    },
  ): void {
    this.deps.store.insertAttempt({
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
  private failWebhook(
    webhook: WebhookRecord,
    attempt: AttemptRecord,
    result: DeliveryResult,
    at: number,
  ): void {
    const { store, logger } = this.deps;
    store.save({ ...webhook, status: 'failed' });
    store.cancelPending(webhook.id, 'the webhook was marked failed');
    store.insertEmail({
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
