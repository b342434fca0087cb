import type { ProblemKind } from './checker.js';
import type { Answer } from './http.js';
import type { GeneratedRequest } from './requests.js';

/**
 * A finding the fuzzer has reported and that is waiting for its fix in the sandbox. Its answers are
 * counted apart ("known") and do not fail the pass, so the pass stays useful for everything else in
 * the meantime. Each entry names what it skips as narrowly as it can and why; once the fix lands,
 * delete the entry, and the pass proves the fix.
 */
export interface KnownFinding {
  id: string;
  /** What is wrong, where the fault seems to be, and what fixes it. */
  reason: string;
  /** The operation's key (`POST /v1/shipments`), or a pattern of keys. */
  operation: string | RegExp;
  kind: ProblemKind;
  /** Narrows the entry to the requests that show the finding. */
  matches?(request: GeneratedRequest, answer: Answer | undefined): boolean;
}

/** The findings waiting for a fix: empty this list as they land. */
export const KNOWN_FINDINGS: readonly KnownFinding[] = [];

export function knownFinding(
  findings: readonly KnownFinding[],
  operation: string,
  kind: ProblemKind,
  request: GeneratedRequest,
  answer: Answer | undefined,
): KnownFinding | undefined {
  return findings.find(
    (finding) =>
      finding.kind === kind &&
      (typeof finding.operation === 'string'
        ? finding.operation === operation
        : finding.operation.test(operation)) &&
      (finding.matches?.(request, answer) ?? true),
  );
}
