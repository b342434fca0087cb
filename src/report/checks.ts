import ms from 'ms';
import { formatTimestamp } from '../core/time.js';
import type { AttemptRecord } from '../webhooks/attempt-store.js';
import {
  answerOf,
  counted,
  deliveriesSent,
  deliveryEvidence,
  failureOf,
  labelUrlEvidence,
  requestEvidence,
  seconds,
  times,
} from './evidence.js';
import {
  type CheckDefinition,
  fromTallies,
  type Judgement,
  NO_DELIVERY_YET,
  notObserved,
  type ReportFacts,
} from './judgement.js';
import { CREATING_POSTS, EVIDENCE_KEPT, POLLS_PER_MINUTE } from './observations.js';
import type { CheckStatus } from './schema.js';

/** The checks, in the report's order (see docs/report.md for each). */
export const CHECKS: readonly CheckDefinition[] = [
  {
    id: 'respects_retry_after',
    title: 'Waits for Retry-After after a 429',
    judge: ({ observations: { earlyAfter429, waitedAfter429 } }) =>
      fromTallies(earlyAfter429, waitedAfter429, {
        fail: ({ first, next }, count) =>
          `Called again ${seconds(next.wallAt - first.answeredWallAt)} after a 429 that asked to wait ` +
          `${first.retryAfter} s (request ${next.id} after ${first.id})${times(count)}: the live API keeps ` +
          'refusing early calls and may block the key; wait Retry-After seconds before retrying.',
        pass: ({ first, next }, count) =>
          `Waited out Retry-After after every 429 followed by another call (${count}); the first time, ` +
          `${seconds(next.wallAt - first.answeredWallAt)} for the ${first.retryAfter} s asked.`,
        notObserved:
          'No 429 has been followed by another call of the same key yet, so there is nothing to judge.',
        evidence: ({ first, next }, failing) => [
          requestEvidence(first, `answered 429 with Retry-After: ${first.retryAfter}`),
          requestEvidence(
            next,
            `the same key called again ${seconds(next.wallAt - first.answeredWallAt)} later` +
              (failing ? ', before Retry-After had passed' : ''),
          ),
        ],
      }),
  },
  {
    id: 'verifies_signatures',
    title: 'Refuses webhook deliveries with a wrong signature',
    judge: judgeSignatures,
  },
  {
    id: 'webhook_handler_succeeds',
    title: 'Answers every webhook delivery with a 2xx',
    judge: ({ attempts }) => {
      const sent = deliveriesSent(attempts);
      const failed = sent.filter((attempt) => attempt.status === 'failed');
      const latest = failed[0];
      if (latest) {
        return {
          status: 'fail',
          summary:
            `The receiver answered ${answerOf(latest)} to ${latest.id} (${latest.eventType}) at ` +
            `${formatTimestamp(latest.sentAt ?? latest.scheduledAt)}${times(failed.length, 'failures')}: the live ` +
            'service retries 5 times over about 10 hours, then marks the webhook failed and stops sending; ' +
            'answer 2xx as soon as the event is stored.',
          counts: { passed: sent.length - failed.length, failed: failed.length },
          evidence: failed
            .slice(0, EVIDENCE_KEPT)
            .map((attempt) => deliveryEvidence(attempt, `answered ${answerOf(attempt)}`)),
        };
      }
      if (sent.length === 0) return notObserved(NO_DELIVERY_YET);
      return {
        status: 'pass',
        summary: `The receiver answered 2xx to every delivery (${sent.length}).`,
        counts: { passed: sent.length, failed: 0 },
        evidence: sent
          .slice(0, 1)
          .map((attempt) => deliveryEvidence(attempt, `answered ${answerOf(attempt)}`)),
      };
    },
  },
  {
    id: 'webhook_handler_fast',
    title: 'Answers webhook deliveries within half the timeout',
    judge: ({ attempts, webhookTimeoutMs }) => {
      const limit = webhookTimeoutMs / 2;
      const answered = deliveriesSent(attempts).filter(
        (attempt) => attempt.durationMs !== null && attempt.error !== 'connection',
      );
      const slow = answered.filter((attempt) => (attempt.durationMs as number) > limit);
      const slowest = slow[0];
      const counts = { passed: answered.length - slow.length, failed: slow.length };
      const took = (attempt: AttemptRecord) =>
        attempt.error === 'timeout'
          ? `gave no answer within the ${seconds(webhookTimeoutMs)} timeout`
          : `took ${seconds(attempt.durationMs as number)} to answer ${attempt.responseStatus}`;
      if (slowest) {
        return {
          status: 'fail',
          summary:
            `The receiver ${took(slowest)} to ${slowest.id} (${slowest.eventType})${times(slow.length)}, more ` +
            `than ${seconds(limit)}, half the ${seconds(webhookTimeoutMs)} timeout: a little more load and the ` +
            'live service gives up and sends the event again; answer 2xx at once and do the work afterwards.',
          counts,
          evidence: slow.slice(0, EVIDENCE_KEPT).map((attempt) => deliveryEvidence(attempt, took(attempt))),
        };
      }
      if (answered.length === 0) return notObserved(NO_DELIVERY_YET);
      const longest = answered.reduce((a, b) => ((b.durationMs ?? 0) > (a.durationMs ?? 0) ? b : a));
      return {
        status: 'pass',
        summary:
          `The receiver answered every delivery (${answered.length}) within ${seconds(limit)}, half the ` +
          `timeout; the slowest took ${seconds(longest.durationMs as number)}.`,
        counts,
        evidence: [deliveryEvidence(longest, `the slowest: ${took(longest)}`)],
      };
    },
  },
  {
    id: 'refreshes_label_urls',
    title: 'Fetches label URLs only while they are valid',
    judge: ({ observations: { expiredLabelUrls, freshLabelUrls } }) =>
      fromTallies(expiredLabelUrls, freshLabelUrls, {
        fail: (fetch, count) =>
          `Fetched the label_url of ${fetch.labelId} ${ms(fetch.at - fetch.expiresAt, { long: true })} after it ` +
          `expired at ${formatTimestamp(fetch.expiresAt)}${times(count)}: the live CDN answers 403 url_expired; ` +
          "a label_url lasts 7 days from the label's creation, so keep the file when you first fetch it or " +
          `download it with GET /v1/labels/${fetch.labelId}/download and your key.`,
        pass: (_fetch, count) =>
          `Fetched label URLs only while they were valid (${counted(count, 'fetch', 'fetches')}).`,
        notObserved: "No label URL has been fetched through the sandbox's CDN yet.",
        evidence: (fetch, failing) => [
          labelUrlEvidence(
            fetch,
            failing
              ? `fetched ${ms(fetch.at - fetch.expiresAt, { long: true })} after the URL expired: 403 url_expired`
              : 'fetched while the URL was valid',
          ),
        ],
      }),
  },
  {
    id: 'uses_valid_keys',
    title: 'Calls only with keys that are valid',
    judge: ({ observations: { revokedKeyUses, requests } }) => {
      const first = revokedKeyUses.kept[0];
      if (first) {
        return {
          status: 'fail',
          summary:
            `Called ${first.method} ${first.path} with key ${first.keyId} after it was revoked (request ` +
            `${first.id})${times(revokedKeyUses.count)}: the live API answers 401 invalid_api_key; put the new ` +
            'key in place everywhere before revoking the old one.',
          counts: { passed: requests, failed: revokedKeyUses.count },
          evidence: revokedKeyUses.kept.map((request) =>
            requestEvidence(request, `key ${request.keyId} had been revoked: 401 invalid_api_key`),
          ),
        };
      }
      if (requests === 0) return notObserved('No API request has been made yet.');
      return {
        status: 'pass',
        summary: `Every API request (${requests}) came with a key that was valid at the time.`,
        counts: { passed: requests, failed: 0 },
        evidence: [],
      };
    },
  },
  {
    id: 'relies_on_tracking_webhooks',
    title: 'Does not poll tracking that webhooks deliver',
    judge: judgePolling,
  },
  {
    id: 'checks_before_retrying',
    title: 'Looks before resending a POST whose outcome is unknown',
    judge: ({ observations: { blindRetries, checkedRetries } }) =>
      fromTallies(blindRetries, checkedRetries, {
        fail: ({ first, next }, count) =>
          `Sent POST ${first.path} again (request ${next.id}) after it ${failureOf(first)} (request ${first.id}) ` +
          `without reading ${CREATING_POSTS[first.path]?.join(' or ')} first${times(count)}: had the first one ` +
          'gone through, the live API would now hold it twice (two shipments, two paid labels); look for it ' +
          'before sending it again.',
        pass: (_pair, count) =>
          `Looked for the result before sending a POST again after a 5xx or a dropped connection (${count}).`,
        notObserved:
          'No POST that failed with a 5xx or a dropped connection has been sent again yet (an injected fault ' +
          'makes one: POST /_sandbox/faults).',
        evidence: ({ first, between, next }, failing) => [
          requestEvidence(first, `${failureOf(first)}: whether it took effect is unknown`),
          ...(between ? [requestEvidence(between, 'read what the POST creates')] : []),
          requestEvidence(
            next,
            failing ? 'the same POST again, unchecked' : 'the same POST again, after checking',
          ),
        ],
      }),
  },
  {
    id: 'does_not_repeat_rejected_requests',
    title: 'Changes a request refused as invalid before sending it again',
    judge: ({ observations: { repeatedRefusals, changedAfterRefusal } }) =>
      fromTallies(repeatedRefusals, changedAfterRefusal, {
        fail: ({ first, next }, count) =>
          `Sent ${first.method} ${first.path} again unchanged (request ${next.id}) after it was refused ` +
          `${first.status} ${first.code} (request ${first.id})${times(count)}: the live API refuses it the same ` +
          "way every time; fix what the error's message and field name instead of retrying.",
        pass: (_pair, count) =>
          `Changed every request refused as invalid before sending to the same route again (${count}).`,
        notObserved:
          'No request refused as invalid (400, 422) has been followed by another to its route yet.',
        evidence: ({ first, next }, failing) => [
          requestEvidence(first, `refused ${first.status} ${first.code}`),
          requestEvidence(next, failing ? 'the same request again, unchanged' : 'the next request, changed'),
        ],
      }),
  },
];

/**
 * The latest probe of each webhook decides: a forged delivery answered 2xx fails; a forged one
 * refused while its genuine twin was accepted passes; anything else (both refused, no answer) shows
 * nothing. A receiver fixed since is judged by its new probe.
 */
function judgeSignatures({ attempts }: ReportFacts): Judgement {
  const latest = new Map<string, { genuine?: AttemptRecord; forged?: AttemptRecord }>();
  for (const attempt of attempts) {
    if (attempt.probe === null || (attempt.status !== 'succeeded' && attempt.status !== 'failed')) continue;
    const probe = latest.get(attempt.webhookId) ?? {};
    probe[attempt.probe] ??= attempt;
    latest.set(attempt.webhookId, probe);
  }
  const accepted: AttemptRecord[] = [];
  const refused: { genuine: AttemptRecord; forged: AttemptRecord }[] = [];
  let inconclusive: { genuine?: AttemptRecord; forged?: AttemptRecord } | undefined;
  for (const probe of latest.values()) {
    const { genuine, forged } = probe;
    if (forged?.status === 'succeeded') accepted.push(forged);
    else if (genuine?.status === 'succeeded' && forged?.error === 'http') refused.push({ genuine, forged });
    else inconclusive ??= probe;
  }
  const counts = { passed: refused.length, failed: accepted.length };
  const first = accepted[0];
  if (first) {
    return {
      status: 'fail',
      summary:
        `The receiver of ${first.webhookId} answered ${first.responseStatus} to a delivery with a wrong signature ` +
        `(${first.id}, sent by the probe)${times(accepted.length, 'webhooks')}: anyone who knows its URL can send it ` +
        'fake events; refuse a delivery whose Service-Signature is not the HMAC-SHA256 of the raw body with ' +
        'your secret.',
      counts,
      evidence: accepted.map((forged) =>
        deliveryEvidence(forged, `forged signature, answered ${answerOf(forged)}`),
      ),
    };
  }
  const shown = refused[0];
  if (shown) {
    return {
      status: 'pass',
      summary:
        `The receiver refused the forged probe delivery (${answerOf(shown.forged)}) and accepted the genuine one ` +
        `(${refused.length === 1 ? `webhook ${shown.genuine.webhookId}` : `${refused.length} webhooks`}).`,
      counts,
      evidence: refused.flatMap(({ genuine, forged }) => [
        deliveryEvidence(genuine, `genuine signature, answered ${answerOf(genuine)}`),
        deliveryEvidence(forged, `forged signature, answered ${answerOf(forged)}`),
      ]),
    };
  }
  const unclear = inconclusive?.genuine ?? inconclusive?.forged;
  if (inconclusive?.genuine && unclear) {
    return {
      status: 'not_observed',
      summary:
        `The last probe of ${unclear.webhookId} showed nothing: the genuine delivery got ${answerOf(inconclusive.genuine)} ` +
        'too; make the receiver accept correctly signed deliveries, then probe again.',
      counts,
      evidence: [inconclusive.genuine, inconclusive.forged]
        .filter((attempt) => attempt !== undefined)
        .map((attempt) =>
          deliveryEvidence(attempt, `${attempt.probe} signature, answered ${answerOf(attempt)}`),
        ),
    };
  }
  return notObserved(
    'No probe yet: POST /_sandbox/webhooks/{id}/probe sends the receiver a forged delivery and tells whether it refuses it.',
  );
}

/**
 * A burst of polls of one tracking number fails when, by its last poll, the newest delivery of a
 * `tracking.updated` event (to any webhook of the account) had succeeded: the receiver was being told
 * of every change already. Bursts before the first such delivery, or after a failed one, are not
 * judged. With such deliveries and no failing burst, the check passes.
 */
function judgePolling({ observations, attempts }: ReportFacts): Judgement {
  const updates = deliveriesSent(attempts).filter((attempt) => attempt.eventType === 'tracking.updated');
  const delivered = updates.filter((attempt) => attempt.status === 'succeeded');
  const failing = observations.pollingBursts.flatMap((burst) => {
    const before = updates.find((attempt) => (attempt.sentAt ?? attempt.scheduledAt) <= burst.last.at);
    return before?.status === 'succeeded' ? [{ burst, delivery: before }] : [];
  });
  const counts = { passed: delivered.length, failed: failing.length };
  const first = failing[0];
  if (first) {
    const { burst, delivery } = first;
    return {
      status: 'fail',
      summary:
        `Fetched GET /v1/tracking/${burst.trackingNumber} ${burst.count} times within ` +
        `${seconds(burst.last.wallAt - burst.firstWallAt)} (the last: request ${burst.last.id}) while its updates ` +
        `were being delivered to your webhook (${delivery.id})${times(failing.length, 'bursts')}: the live API counts ` +
        'each poll against 120 requests a minute per key; update from the tracking.updated webhook instead.',
      counts,
      evidence: failing
        .slice(0, EVIDENCE_KEPT)
        .flatMap(({ burst: each, delivery: update }) => [
          requestEvidence(
            each.last,
            `${each.count}th fetch of ${each.trackingNumber} within ${seconds(each.last.wallAt - each.firstWallAt)}`,
          ),
          deliveryEvidence(update, 'tracking.updated was already delivered, answered 2xx'),
        ]),
    };
  }
  const latest = delivered[0];
  if (!latest) {
    return notObserved(
      'No tracking.updated event has been delivered to a webhook yet, so polling cannot be judged.',
    );
  }
  return {
    status: 'pass',
    summary:
      `Tracking updates reached your webhook (${counted(delivered.length, 'delivery', 'deliveries')}) and no tracking number was ` +
      `fetched ${POLLS_PER_MINUTE} times within a minute while they did.`,
    counts,
    evidence: [deliveryEvidence(latest, 'tracking.updated delivered, answered 2xx')],
  };
}

/** The report's overall status: any failure fails it; otherwise any pass passes it. */
export function overallStatus(checks: readonly { status: CheckStatus }[]): CheckStatus {
  if (checks.some((check) => check.status === 'fail')) return 'fail';
  return checks.some((check) => check.status === 'pass') ? 'pass' : 'not_observed';
}
