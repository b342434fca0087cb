import type { Logger } from 'pino';
import { isPassingStorageFailure } from '../core/storage-errors.js';
import { BackoffNotice, backoffDelay } from '../db/backoff.js';

/**
 * Accounts whose background runs failed rest before the timer runs them again: 1 s, doubling with
 * each failure in a row, at most 30 s, until a run succeeds (requests still run them meanwhile). A
 * passing failure (the disk is full, the database is busy) is said once for all accounts
 * (`BackoffNotice`); any other is a bug in a queue, logged each time, and rests too, so that it
 * cannot spin either.
 */
export class AccountBackoff {
  /** Each failing account: how many times in a row, and the timer of its rest while it rests. */
  private readonly failing = new Map<string, { failures: number; rest: NodeJS.Timeout | undefined }>();
  private readonly notice: BackoffNotice;

  constructor(
    private readonly logger: Logger,
    /** Whether the background timer runs (no rest is timed while it is stopped). */
    private readonly running: () => boolean,
    /** Called when a rest ends: the account's work may run again. */
    private readonly restEnded: () => void,
  ) {
    this.notice = new BackoffNotice(logger, 'background work');
  }

  /** While an account rests, the background timer leaves it alone. */
  resting(accountId: string): boolean {
    return this.failing.get(accountId)?.rest !== undefined;
  }

  /** The account's work failed: it rests, longer after each failure in a row. */
  failed(accountId: string, error: unknown): void {
    this.report(error, { account: accountId }, 'scheduled work failed');
    const state = this.failing.get(accountId) ?? { failures: 0, rest: undefined };
    state.failures += 1;
    clearTimeout(state.rest);
    this.failing.set(accountId, state);
    if (!this.running()) return;
    state.rest = setTimeout(() => {
      state.rest = undefined;
      this.restEnded();
    }, backoffDelay(state.failures));
    state.rest.unref();
  }

  /** The account's work ran (from the timer or a request): it no longer backs off. */
  recovered(accountId: string): void {
    const state = this.failing.get(accountId);
    if (state) {
      clearTimeout(state.rest);
      this.failing.delete(accountId);
    }
    this.sayIfAllRecovered();
  }

  /** An account that failed and has nothing due any more has nothing to back off from. */
  forgetIdle(accountsWithWork: ReadonlyMap<string, unknown>): void {
    for (const [accountId, { rest }] of this.failing) {
      if (!rest && !accountsWithWork.has(accountId)) this.recovered(accountId);
    }
  }

  /** Once no account fails any more, the notice says that work resumed. */
  sayIfAllRecovered(): void {
    if (this.failing.size === 0) this.notice.succeeded();
  }

  /** A passing failure is said once for all (the notice); anything else is logged as it comes. */
  report(error: unknown, fields: Record<string, unknown>, message: string): void {
    if (isPassingStorageFailure(error)) this.notice.failed(error);
    else this.logger.error({ err: error, ...fields }, message);
  }

  /** The scheduler stops: no rest is timed any more, and the failures are forgotten. */
  stop(): void {
    for (const { rest } of this.failing.values()) clearTimeout(rest);
    this.failing.clear();
  }
}
