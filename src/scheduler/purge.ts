import { isPassingStorageFailure } from '../core/storage-errors.js';
import { DAY } from '../core/time.js';
import type { JobStore } from './job-store.js';

/**
 * How long finished jobs (done, failed, cancelled) stay in the table, on their account's clock, for
 * a look at what ran; then they are deleted. Nothing in the sandbox reads them: a job runs only
 * while pending, and an advance answers with what it ran from memory. Kept forever, every tracking
 * step of every label and every webhook attempt's job stayed in the database (in the process's
 * memory with `--memory`).
 */
export const FINISHED_JOB_RETENTION_MS = DAY;

/** Deletes the account's jobs that finished more than the retention before `now` (its clock). */
export function purgeFinished(store: JobStore, accountId: string, now: number): number {
  return store.deleteFinishedBefore(accountId, now - FINISHED_JOB_RETENTION_MS);
}

/** After a run: housekeeping that a full disk may refuse (a delete writes too) waits for the next run. */
export function purgeFinishedIfPossible(store: JobStore, accountId: string, now: number): void {
  try {
    purgeFinished(store, accountId, now);
  } catch (error) {
    if (!isPassingStorageFailure(error)) throw error;
  }
}

/**
 * At start, every account with finished jobs, each at its clock's now (`nowOf`; an account without
 * a clock is left alone). Accounts whose clocks have no work left are purged only here; the others
 * after each of their runs as well.
 */
export function purgeEveryAccount(store: JobStore, nowOf: (accountId: string) => number | undefined): void {
  for (
    let accountId = store.nextAccountWithFinished('');
    accountId !== undefined;
    accountId = store.nextAccountWithFinished(accountId)
  ) {
    const now = nowOf(accountId);
    if (now !== undefined) purgeFinished(store, accountId, now);
  }
}
