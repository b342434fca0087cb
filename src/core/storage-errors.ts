import { ApiError } from './errors.js';

/**
 * What the database's failures mean for whoever asked for the write. SQLite's errors carry a `code`
 * (better-sqlite3 gives the extended name: `SQLITE_IOERR_WRITE`), PostgreSQL's its SQLSTATE (`53100`)
 * or, for a connection that failed, the system's (`ECONNREFUSED`); they are told apart by it here, so
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
export type StorageFailure = 'full' | 'busy' | 'io' | 'unavailable';

const NO_ROOM = new Set(['SQLITE_FULL', 'SQLITE_IOERR_WRITE', 'SQLITE_IOERR_SHMSIZE', '53100']);
/** PostgreSQL: a serialization failure, a deadlock, a lock not to be had now. */
const BUSY = new Set(['40001', '40P01', '55P03']);
const SOCKET_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/**
 * What `pg` says, without a code, of a connection that ended or never came (`timeout expired` is a
 * client's own connection timeout, which its pool words as "connection timeout").
 */
const LOST_CONNECTION =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|^timeout expired$|Client has encountered a connection error|Query read timeout|Cannot use a pool after calling end/i;

/**
 * - `unavailable`: the database cannot be reached (PostgreSQL's server is down, restarting or out of
 *   reach: SQLSTATE classes 08 and 57P, a refused or broken socket, `pg`'s own timeouts).
 */
export function storageFailure(error: unknown): StorageFailure | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  if (typeof code === 'string') {
    if (NO_ROOM.has(code)) return 'full';
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED') || BUSY.has(code)) return 'busy';
    if (code.startsWith('SQLITE_IOERR')) return 'io';
    if (code.startsWith('08') || code.startsWith('57P') || SOCKET_ERRORS.has(code)) return 'unavailable';
    // A server on this machine reached through its Unix socket, which goes with the server; a file
    // that is missing (a label's, say) is no database being away.
    if (code === 'ENOENT' && (error as { syscall?: unknown }).syscall === 'connect') return 'unavailable';
  }
  if (error instanceof Error && LOST_CONNECTION.test(error.message)) return 'unavailable';
  return undefined;
}

/** True when the database cannot be reached now (a server that is down or restarting). */
export function isDatabaseUnavailable(error: unknown): boolean {
  return storageFailure(error) === 'unavailable';
}

/** True when the write failed because the disk (or the database's size limit) is full. */
export function isDiskFull(error: unknown): boolean {
  return storageFailure(error) === 'full';
}

/**
 * True when the same write is worth trying again later: the disk is full, the database busy or out of
 * reach, I/O failed.
 */
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

/** The answer to a request while the database cannot be reached: nothing was changed. */
export function serviceUnavailable(): ApiError {
  return new ApiError(
    503,
    'service_unavailable',
    "The sandbox's database cannot be reached, so nothing was changed. Retry shortly.",
    { headers: { 'Retry-After': '5' } },
  );
}
