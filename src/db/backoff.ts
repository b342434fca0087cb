import type { Logger } from 'pino';
import { storageFailure } from '../core/storage-errors.js';

/** The first wait after a failed background write; each failure in a row doubles it, up to the most. */
export const FIRST_BACKOFF_MS = 1000;
export const MAX_BACKOFF_MS = 30_000;

/** How long to wait after `failures` failures in a row (1 or more): 1 s, 2 s, 4 s ... at most 30 s. */
export function backoffDelay(failures: number): number {
  return Math.min(FIRST_BACKOFF_MS * 2 ** Math.max(0, failures - 1), MAX_BACKOFF_MS);
}

const REASONS = {
  full: 'the disk is full',
  busy: 'the database is busy',
  io: 'the disk reports an I/O error',
  unavailable: 'the database cannot be reached',
} as const;

/**
 * Background work whose writes fail for a passing reason keeps trying, and says so once: one line
 * when it starts backing off and one when it works again, never a line per try, so that a full disk
 * does not fill the log as well (it is often on the same disk).
 */
export class BackoffNotice {
  private since: number | undefined;

  constructor(
    private readonly logger: Logger,
    /** What backs off, as the log says it: "background work", "keys' last-used times". */
    private readonly what: string,
  ) {}

  get backingOff(): boolean {
    return this.since !== undefined;
  }

  failed(error: unknown): void {
    if (this.since !== undefined) return;
    this.since = Date.now();
    const failure = storageFailure(error);
    const reason = failure ? REASONS[failure] : 'a write failed';
    this.logger.warn(
      { err: error, code: (error as { code?: unknown })?.code },
      `${this.what} is backing off: ${reason}; it resumes by itself once writing works again`,
    );
  }

  succeeded(): void {
    if (this.since === undefined) return;
    const seconds = Math.round((Date.now() - this.since) / 1000);
    this.since = undefined;
    this.logger.info({ after_seconds: seconds }, `${this.what} resumed: writing works again`);
  }
}
