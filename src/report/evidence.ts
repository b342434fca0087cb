import { formatTimestamp, SECOND } from '../core/time.js';
import type { JournaledRequest } from '../journal/journal.js';
import type { AttemptRecord } from '../webhooks/attempt-store.js';
import type { LabelUrlNote } from './observations.js';
import type { Evidence } from './schema.js';

/** The words and the evidence the checks share: how a request, a delivery or a label URL fetch is shown. */

/**
 * Attempts that went to the receiver and have an outcome: not probes, not refused by the destination
 * policy (nothing was sent), not scheduled, on the wire or cancelled.
 */
export function deliveriesSent(attempts: readonly AttemptRecord[]): AttemptRecord[] {
  return attempts.filter(
    (attempt) =>
      attempt.probe === null &&
      (attempt.status === 'succeeded' ||
        (attempt.status === 'failed' && attempt.error !== 'destination_not_allowed')),
  );
}

export function answerOf(attempt: AttemptRecord): string {
  if (attempt.error === 'timeout') return 'nothing in time (timeout)';
  if (attempt.error === 'connection') return `nothing (connection failed: ${attempt.errorMessage})`;
  return String(attempt.responseStatus);
}

export function failureOf(request: JournaledRequest): string {
  return request.status === 0 ? 'lost its connection' : `failed with ${request.status}`;
}

/** ", 3 times in all" when an occurrence happened more than once. */
export function times(count: number, what = 'times'): string {
  return count > 1 ? `, ${count} ${what} in all` : '';
}

/** Real time as a developer reads it: `32 ms`, `1.4 s`, `61 s`. */
export function seconds(millis: number): string {
  if (millis < SECOND) return `${Math.round(millis)} ms`;
  return millis < 10 * SECOND ? `${(millis / SECOND).toFixed(1)} s` : `${Math.round(millis / SECOND)} s`;
}

/** `1 label URL`, `3 label URLs`. */
export function counted(count: number, noun: string, plural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : plural}`;
}

export function requestEvidence(request: JournaledRequest, detail: string): Evidence {
  return {
    kind: 'request',
    id: request.id,
    at: formatTimestamp(request.at),
    wall_at: formatTimestamp(request.wallAt),
    detail: `${request.method} ${request.path}: ${detail}`,
    method: request.method,
    path: request.path,
    key_id: request.keyId,
    response_status: request.status === 0 ? null : request.status,
  };
}

export function deliveryEvidence(attempt: AttemptRecord, detail: string): Evidence {
  return {
    kind: 'delivery',
    id: attempt.id,
    at: formatTimestamp(attempt.sentAt ?? attempt.scheduledAt),
    wall_at: attempt.sentWallAt === null ? null : formatTimestamp(attempt.sentWallAt),
    detail: `${attempt.eventType} to ${attempt.webhookId}: ${detail}`,
    webhook_id: attempt.webhookId,
    event_id: attempt.eventId,
    event: attempt.eventType,
    response_status: attempt.responseStatus,
    duration_ms: attempt.durationMs,
    probe_signature: attempt.probe,
  };
}

export function labelUrlEvidence(fetch: LabelUrlNote, detail: string): Evidence {
  return {
    kind: 'label_url',
    id: fetch.labelId,
    at: formatTimestamp(fetch.at),
    wall_at: formatTimestamp(fetch.wallAt),
    detail,
    expires_at: formatTimestamp(fetch.expiresAt),
    shipment_id: fetch.shipmentId,
  };
}
