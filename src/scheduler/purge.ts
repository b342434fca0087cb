import { isPassingStorageFailure } from '../core/storage-errors.js';
import { DAY } from '../core/time.js';
import type { Sql } from '../db/sql.js';
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
export function purgeFinished(q: Sql, store: JobStore, accountId: string, now: number): Promise<number> {
  return store.deleteFinishedBefore(q, accountId, now - FINISHED_JOB_RETENTION_MS);
}

/** After a run: housekeeping that a full disk may refuse (a delete writes too) waits for the next run. */
export async function purgeFinishedIfPossible(
  q: Sql,
  store: JobStore,
  accountId: string,
  now: number,
): Promise<void> {
  try {
    await purgeFinished(q, store, accountId, now);
  } catch (error) {
    if (!isPassingStorageFailure(error)) throw error;
  }
}

/**
 * At start, every account with finished jobs, each at its clock's now (`nowOf`; an account without
 * a clock is left alone). Accounts whose clocks have no work left are purged only here; the others
 * after each of their runs as well.
 */
export async function purgeEveryAccount(
  q: Sql,
  store: JobStore,
  nowOf: (accountId: string) => Promise<number | undefined>,
): Promise<void> {
  for (
    let accountId = await store.nextAccountWithFinished(q, '');
    accountId !== undefined;
    accountId = await store.nextAccountWithFinished(q, accountId)
  ) {
    const now = await nowOf(accountId);
    if (now !== undefined) await purgeFinished(q, store, accountId, now);
  }
}
