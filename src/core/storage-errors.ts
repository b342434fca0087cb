import { ApiError } from './errors.js';

/**
 * What the database's failures mean for whoever asked for the write. SQLite's errors carry a `code`
 * (better-sqlite3 gives the extended name: `SQLITE_IOERR_WRITE`); they are told apart by it here, so
 * the HTTP layer, the scheduler and the modules agree without any of them knowing the driver.
 *
 * - `full`: there is no room for the write. `SQLITE_FULL` is what a full disk (ENOSPC) or the
 *   database's own size limit gives; a quota (EDQUOT) surfaces as `SQLITE_IOERR_WRITE`, and failing to
 *   grow the WAL's shared-memory file as `SQLITE_IOERR_SHMSIZE`, both the same trouble to the caller.
 * - `busy`: another connection holds a lock (`SQLITE_BUSY*`, `SQLITE_LOCKED*`).
 * - `io`: any other I/O error (`SQLITE_IOERR_*`).
 *
 * All three pass: the same write succeeds later, once there is room or the lock is free. Anything
 * else (a constraint, a bug) fails the same way every time.
 */
export type StorageFailure = 'full' | 'busy' | 'io';

const NO_ROOM = new Set(['SQLITE_FULL', 'SQLITE_IOERR_WRITE', 'SQLITE_IOERR_SHMSIZE']);

export function storageFailure(error: unknown): StorageFailure | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return undefined;
  if (NO_ROOM.has(code)) return 'full';
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'busy';
  if (code.startsWith('SQLITE_IOERR')) return 'io';
  return undefined;
}

/** True when the write failed because the disk (or the database's size limit) is full. */
export function isDiskFull(error: unknown): boolean {
  return storageFailure(error) === 'full';
}

/** True when the same write is worth trying again later: the disk is full, the database busy, I/O failed. */
export function isPassingStorageFailure(error: unknown): boolean {
  return storageFailure(error) !== undefined;
}

/** The answer to a write refused for lack of room; its transaction rolled back, so nothing changed. */
export function insufficientStorage(): ApiError {
  return new ApiError(
    507,
    'insufficient_storage',
    "The sandbox's disk is full, so nothing was changed. Retry once space has been freed.",
  );
}
