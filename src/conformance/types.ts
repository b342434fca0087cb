/**
 * The public types of `conformance()` (`import { conformance } from 'shipping-sandbox'`), written out
 * apart from the code so the published declarations stand alone.
 */

export interface ConformanceOptions {
  /** The other deployment's base URL, ending in `/v1` (`https://api.example.com/v1`). */
  target: string;
  /** A test key of the target (`svc_test_…`): the script creates its own data with it, and cleans up. */
  key: string;
  /**
   * The https URL the script registers as a webhook on both sides (deleted again at once; no event is
   * sent to it). It must be one the target accepts: the real service may refuse addresses it cannot
   * reach. `https://example.com/shipping-sandbox-conformance` by default.
   */
  webhookUrl?: string;
  /** How long one call may take before it counts as unanswered, in milliseconds; 30 s by default. */
  timeoutMs?: number;
}

/** One way the target's answer differs from the sandbox's. */
export interface ConformanceDifference {
  /**
   * The part that differs: `status`, `header:content-type`, `header:x-ratelimit-remaining`,
   * `body.error.code`, `body.data[].rate.amount` (`[]` stands for every element of an array).
   */
  path: string;
  /** What the sandbox answered there: a status, a value, or a shape such as `string /^shp_…$/`; `(absent)` when it had nothing there. */
  expected: string | number;
  /** What the target answered there, in the same words. */
  actual: string | number;
}

export interface ConformanceStep {
  /** The step of the script (`labels.create.pdf`). */
  id: string;
  /** `METHOD /path` relative to the base URL; `{step.field}` stands for a value an earlier answer gave. */
  call: string;
  result: 'same' | 'different' | 'skipped';
  differences: ConformanceDifference[];
  /** Why the step was skipped. */
  reason?: string;
}

/** A call made after the script to remove what it created on the target. */
export interface ConformanceCleanup {
  call: string;
  /** The target's status, or why there was none. */
  status: number | string;
  /** Whether it worked (a 2xx). */
  done: boolean;
}

/** The report: what `--json` prints. */
export interface ConformanceReport {
  target: string;
  steps: ConformanceStep[];
  summary: { same: number; different: number; skipped: number };
  /** What was removed from the target afterwards, and what could not be. */
  cleanup: ConformanceCleanup[];
}
