import type { AttemptRecord } from '../webhooks/attempt-store.js';
import type { AccountObservations, Tally } from './observations.js';
import type { Check, CheckId, Evidence } from './schema.js';

/** What the checks judge: the account's observations, its recent delivery attempts, the settings. */
export interface ReportFacts {
  observations: AccountObservations;
  /** The account's most recent delivery attempts, newest first. */
  attempts: readonly AttemptRecord[];
  /** How long a receiver may take (`--webhook-timeout`), real milliseconds. */
  webhookTimeoutMs: number;
}

export interface CheckDefinition {
  id: CheckId;
  title: string;
  judge(facts: ReportFacts): Judgement;
}

export type Judgement = Omit<Check, 'id' | 'title'>;

export const NO_DELIVERY_YET =
  'No webhook delivery has been answered yet (register one with POST /v1/webhooks; POST /_sandbox/events/trigger fires a test event).';

export function notObserved(summary: string): Judgement {
  return { status: 'not_observed', summary, counts: { passed: 0, failed: 0 }, evidence: [] };
}

/** A check judged by two tallies of occurrences: any failing one fails it, any passing one passes it. */
export function fromTallies<T>(
  failing: Tally<T>,
  passing: Tally<T>,
  words: {
    fail: (first: T, count: number) => string;
    pass: (first: T, count: number) => string;
    notObserved: string;
    evidence: (occurrence: T, failing: boolean) => Evidence[];
  },
): Judgement {
  const counts = { passed: passing.count, failed: failing.count };
  const firstFailing = failing.kept[0];
  if (firstFailing !== undefined) {
    return {
      status: 'fail',
      summary: words.fail(firstFailing, failing.count),
      counts,
      evidence: failing.kept.flatMap((occurrence) => words.evidence(occurrence, true)),
    };
  }
  const firstPassing = passing.kept[0];
  if (firstPassing === undefined) return notObserved(words.notObserved);
  return {
    status: 'pass',
    summary: words.pass(firstPassing, passing.count),
    counts,
    evidence: words.evidence(firstPassing, false),
  };
}
