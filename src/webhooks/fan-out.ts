import { eachYielding } from '../core/yielding.js';
import type { WebhookRecord } from './store.js';

/**
 * Webhooks whose attempts an event writes before the event loop turns. Each event writes an attempt
 * for each subscriber, in the event's transaction (the outbox). An account has at most 100 webhooks,
 * but one that registered more before the cap keeps them: in chunks, the process goes on serving
 * between them (sockets, timers, sends on the wire, answers kept in memory) instead of stopping for
 * the whole fan-out. On SQLite, other transactions still wait for this one to commit; the cap is what
 * keeps that short.
 */
export const FAN_OUT_CHUNK = 25;

/** Runs `schedule` for each subscriber, in order, a chunk at a time. */
export function fanOutInChunks(
  subscribers: readonly WebhookRecord[],
  schedule: (webhook: WebhookRecord) => Promise<void>,
): Promise<void> {
  return eachYielding(subscribers, FAN_OUT_CHUNK, schedule);
}
