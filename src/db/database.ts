import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS } from './migrations.js';

export type Db = Database.Database;

export const DATABASE_FILE = 'sandbox.db';

/** The page size of an in-memory database (see openDatabase). */
export const MEMORY_PAGE_SIZE = 8192;

/** Where the database lives: `:memory:` or `<data dir>/sandbox.db` (the directory is created). */
export function databaseLocation(options: { memory: boolean; dataDir: string }): string {
  if (options.memory) return ':memory:';
  const dir = resolve(options.dataDir);
  mkdirSync(dir, { recursive: true });
  return join(dir, DATABASE_FILE);
}

/** Opens (or creates) the database, sets the pragmas and brings the schema up to date. */
export function openDatabase(location: string): Db {
  const db = new Database(location);
  // In memory every page is its own allocation in the process's heap, and around each one the
  // request work's short-lived allocations leave gaps: with 100,000 shipments, 4 KiB pages cost
  // 25 to 40 MiB more resident memory than 8 KiB ones, for no measurable difference in speed.
  // (Set before the first table exists; a file keeps SQLite's 4 KiB, which WAL writes whole.)
  if (location === ':memory:') db.pragma(`page_size = ${MEMORY_PAGE_SIZE}`);
  // WAL lets readers go on while a write commits; NORMAL is durable across a process crash,
  // which is the failure a sandbox has to survive (not a power cut).
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

function migrate(db: Db): void {
  const applied = db.pragma('user_version', { simple: true }) as number;
  if (applied > MIGRATIONS.length) {
    throw new Error(
      `The database was written by a newer sandbox (schema ${applied}, this one knows ${MIGRATIONS.length}).`,
    );
  }
  for (let version = applied; version < MIGRATIONS.length; version++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[version] as string);
      db.pragma(`user_version = ${version + 1}`);
    })();
  }
}

type Work = () => unknown;
const runners = new WeakMap<Db, (work: Work) => unknown>();

/**
 * Runs `work` in a transaction (a savepoint when one is already open), committed when it returns and
 * rolled back when it throws. One wrapper per database serves every call: `db.transaction(fn)` builds
 * four wrapper functions each time, a noticeable part of a small write.
 */
export function transaction<T>(db: Db, work: () => T): T {
  let run = runners.get(db);
  if (!run) {
    run = db.transaction((inner: Work) => inner());
    runners.set(db, run);
  }
  return run(work) as T;
}
