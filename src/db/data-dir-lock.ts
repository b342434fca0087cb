import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { checkWritable, DirectoryError, makeDirectories } from '../core/directories.js';

/** The lock's own small database, beside the sandbox's; it holds who owns the directory, nothing else. */
export const LOCK_FILE = 'sandbox.lock';

/** A data directory that cannot be created or written; the message names it and says why. */
export class DataDirectoryUnusable extends Error {
  override name = 'DataDirectoryUnusable';
}

/** A second server on a data directory that a running one owns. */
export class DataDirectoryInUse extends Error {
  override name = 'DataDirectoryInUse';
}

export interface DataDirectoryLock {
  /** The lock file's path. */
  readonly path: string;
  /** Gives the directory up (at close; a process that dies gives it up by dying). */
  release(): void;
}

/**
 * Makes this process the one server of a data directory for as long as it lives, or throws
 * `DataDirectoryInUse` at once, naming the directory and, when it can, the process that owns it.
 *
 * Two servers on one directory would each trust their own memory (revoked keys, the clock, due work)
 * while the other changes the rows under them, so the second must not start. The lock is a write
 * transaction (`BEGIN IMMEDIATE`) held open for the process's life on a small SQLite database in the
 * directory, taken without waiting. SQLite takes it as a POSIX advisory (fcntl) lock, and the operating
 * system drops those when the process ends, kill -9 and crashes included: no stale lock is ever left
 * for someone to remove by hand, unlike a pid file or an exclusively created file, which outlive a
 * crash and must be guessed about. Node has no flock of its own, and SQLite's locking is the one the
 * database already relies on, including between connections of one process (a second server started
 * in the same process is refused too). The owner's pid is written beside the lock for the message.
 *
 * Nothing else in the process may open the lock file: closing any other descriptor of it would drop
 * the process's POSIX locks on it (SQLite guards its own descriptors against this).
 */
export function lockDataDirectory(dataDir: string): DataDirectoryLock {
  const dir = resolve(dataDir);
  prepareDataDirectory(dir);
  const path = join(dir, LOCK_FILE);
  let db: Database.Database;
  try {
    // No busy timeout: the owner never lets go, so waiting would only delay the refusal.
    db = new Database(path, { timeout: 0 });
  } catch (error) {
    throw new Error(`cannot open ${path} to lock the data directory: ${(error as Error).message}`);
  }
  try {
    if (!takeAndSign(db)) throw inUse(dir, db);
  } catch (error) {
    db.close();
    throw error;
  }
  let held = true;
  return {
    path,
    release() {
      if (!held) return;
      held = false;
      // Closing rolls the open transaction back, which releases the lock.
      db.close();
    },
  };
}

/** Makes the directory if it is missing, and checks that the sandbox can write there. */
export function prepareDataDirectory(dir: string): void {
  try {
    makeDirectories(dir);
    checkWritable(dir);
  } catch (error) {
    if (!(error instanceof DirectoryError)) throw error;
    throw new DataDirectoryUnusable(`the data directory ${error.message}`);
  }
}

/**
 * Takes the lock, writes this process's pid (committed, so that a second server can read it), and
 * takes the lock again. Between the commit and the second take another server may take it: then this
 * one is the second, and stops. A full disk only leaves the pid out.
 */
function takeAndSign(db: Database.Database): boolean {
  if (!begin(db)) return false;
  try {
    db.exec('CREATE TABLE IF NOT EXISTS owner (pid INTEGER NOT NULL, started_at TEXT NOT NULL) STRICT');
    db.exec('DELETE FROM owner');
    db.prepare('INSERT INTO owner (pid, started_at) VALUES (?, ?)').run(
      process.pid,
      new Date().toISOString(),
    );
    db.exec('COMMIT');
  } catch {
    if (db.inTransaction) db.exec('ROLLBACK');
  }
  return begin(db);
}

function begin(db: Database.Database): boolean {
  try {
    db.exec('BEGIN IMMEDIATE');
    return true;
  } catch (error) {
    if ((error as { code?: string }).code?.startsWith('SQLITE_BUSY')) return false;
    throw error;
  }
}

function inUse(dir: string, db: Database.Database): DataDirectoryInUse {
  const pid = ownerPid(db);
  return new DataDirectoryInUse(
    `the data directory ${dir} is in use by another sandbox server${pid === undefined ? '' : ` (process ${pid})`}. ` +
      'Stop that one first, or give this one another --data-dir (or --memory).',
  );
}

/** The owner's pid, if it wrote one and that process is alive (the row may be an earlier owner's). */
function ownerPid(db: Database.Database): number | undefined {
  let pid: number | undefined;
  try {
    // Readable while the owner holds the lock: it only keeps others from writing.
    pid = db.prepare<[], number>('SELECT pid FROM owner').pluck().get();
  } catch {
    return undefined;
  }
  if (pid === undefined) return undefined;
  try {
    // Signal 0 only checks that the process exists.
    process.kill(pid, 0);
    return pid;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
}
