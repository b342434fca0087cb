import { newId } from '../core/ids.js';
import type { Sql } from '../db/sql.js';
import type { EventType } from '../events/schema.js';
import type { RecordedEvent } from '../events/store.js';
import type { AttemptRecord, AttemptStore, ProbeSignature } from './attempt-store.js';
import type { WebhookRecord } from './store.js';

/** What a webhook probe answers: both attempts, each with its outcome. */
export type ProbeOutcome = Record<ProbeSignature, AttemptRecord>;

/** A probe's two attempts, in the order they are written. */
const PROBE_SIGNATURES: readonly ProbeSignature[] = ['genuine', 'forged'];

export interface ProbeDeps {
  db: Sql;
  attempts: AttemptStore;
  /**
   * Records a test event with sample data for a probe, inside the probe's transaction, without
   * announcing it to the other webhooks (the events module).
   */
  recordTestEvent: (tx: Sql, accountId: string, type: EventType, now: number) => Promise<RecordedEvent>;
  /** Sends an attempt written `sending`; resolves once its outcome is written. */
  dispatch: (attempt: AttemptRecord, webhook: WebhookRecord, sentAt: number) => Promise<unknown>;
  /** The wall clock, for the time the attempts went out. */
  realNow: () => number;
  /** The replica sending them. */
  replicaId: string;
}

/**
 * `POST /_sandbox/webhooks/:id/probe`: whether the receiver checks signatures. A test event of the
 * webhook's first subscribed type goes to this webhook alone, now, twice: once correctly signed and
 * once signed with a wrong secret (the signature well formed, so only checking it tells them
 * apart), both with `Service-Probe: true`. Each is a fresh event, so a receiver that drops
 * duplicates by event id still judges both. They go through the same sender as every delivery (the
 * destination policy, the shares, the answer's cap) at the same time, and this resolves once both
 * have their outcome. A probe is never retried and never moves the webhook toward `failed`,
 * whatever its status (a failed webhook may be probed to see whether its receiver is fixed).
 */
export async function probeWebhook(
  deps: ProbeDeps,
  webhook: WebhookRecord,
  now: number,
): Promise<ProbeOutcome> {
  const { db, attempts } = deps;
  const type = webhook.events[0] as EventType;
  const wallAt = deps.realNow();
  const ids = await db.transaction(async (tx) => {
    const made: string[] = [];
    for (const probe of PROBE_SIGNATURES) {
      const event = await deps.recordTestEvent(tx, webhook.accountId, type, now);
      const id = newId('dlv', now);
      await attempts.insertAttempt(tx, {
        id,
        accountId: webhook.accountId,
        webhookId: webhook.id,
        eventId: event.id,
        eventType: type,
        attempt: 0,
        redelivery: false,
        probe,
        scheduledAt: now,
        sendingNow: { wallAt, by: deps.replicaId },
      });
      made.push(id);
    }
    return made;
  });
  const attempt = async (id: string) => (await attempts.findAttempt(db, id)) as AttemptRecord;
  await Promise.all(ids.map(async (id) => deps.dispatch(await attempt(id), webhook, now)));
  const [genuine, forged] = await Promise.all(ids.map(attempt));
  return { genuine: genuine as AttemptRecord, forged: forged as AttemptRecord };
}
