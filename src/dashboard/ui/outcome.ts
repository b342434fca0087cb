import { statusWords } from './format.js';
import type { Attempt } from './types.js';

/**
 * How the delivery log shows an attempt's outcome: words, and the status colour that goes with them
 * (a class `status-<tone>`). A delivery sent with a forged signature by the probe is judged the other
 * way round, as the integration report's `verifies_signatures` judges it: the receiver refusing it is
 * the receiver doing right, and accepting it (any 2xx) is the failure. No answer tells nothing.
 */
export function attemptOutcome(attempt: Pick<Attempt, 'status' | 'probe_signature' | 'error'>): {
  words: string;
  tone: string;
} {
  if (attempt.probe_signature === 'forged') {
    if (attempt.status === 'succeeded') return { words: 'fail (accepted)', tone: 'fail' };
    if (attempt.status === 'failed') {
      return attempt.error === 'http'
        ? { words: 'pass (refused)', tone: 'pass' }
        : { words: 'no answer', tone: 'not_observed' };
    }
  }
  return { words: statusWords(attempt.status), tone: attempt.status };
}
