import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { makeDirectories } from '../core/directories.js';

export type Db = Database.Database;

export const DATABASE_FILE = 'sandbox.db';

/** The page size of an in-memory database (see openInMemory): SQLite's default, as in a file. */
export const MEMORY_PAGE_SIZE = 4096;

/**
 * The page cache of an in-memory database, in KiB: its pages live in one buffer beside it (see
 * openInMemory), from which a page missing here is a copy away. 2 MiB held 2.5 MiB more of the C heap
 * with 100,000 shipments than 512 KiB, for the same CPU a request within the noise.
 */
export const MEMORY_PAGE_CACHE_KIB = 512;

/** Where the database lives: `:memory:` or `<data dir>/sandbox.db` (the directory is created). */
export function databaseLocation(options: { memory: boolean; dataDir: string }): string {
  if (options.memory) return ':memory:';
  const dir = resolve(options.dataDir);
  makeDirectories(dir);
  return join(dir, DATABASE_FILE);
}

/** Opens (or creates) the database and sets the pragmas; the sandbox brings its tables up to date (migrations.ts). */
export function openDatabase(location: string): Db {
  const db = location === ':memory:' ? openInMemory() : new Database(location);
  // WAL lets readers go on while a write commits; NORMAL is durable across a process crash,
  // which is the failure a sandbox has to survive (not a power cut). (In memory there is no WAL:
  // the journal stays in memory.)
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  return db;
}

/**
 * An in-memory database kept by SQLite's memdb: its pages are one buffer that grows by doubling
 * (large enough that the C library maps it apart from its heap), and a page cache of
 * MEMORY_PAGE_CACHE_KIB holds the pages in use. SQLite's plain `:memory:` keeps every page in its
 * cache, each its own allocation in the heap, between which the requests' short-lived allocations
 * leave gaps: with 50,000 labels that held 28 MiB more (20 MiB with 100,000 shipments), for no
 * measurable difference in speed. Deserialising an empty database is the way to memdb that the
 * driver offers. Its one limit: memdb holds at most 1 GiB (SQLite's default), beyond which a write
 * fails as on a full disk (`507 insufficient_storage`, reads go on) rather than growing the process
 * until the system kills it. Each commit copies its changed pages into the buffer: 8 KiB pages (which
 * plain `:memory:` wanted, for fewer allocations) made a write transaction 10 % slower than 4 KiB
 * ones, which hold as much in as much memory.
 */
function openInMemory(): Db {
  const empty = new Database(':memory:');
  empty.pragma(`page_size = ${MEMORY_PAGE_SIZE}`);
  // Writes the first page, whose header carries the page size; until then the database is no bytes.
  empty.exec('VACUUM');
  const db = new Database(empty.serialize());
  empty.close();
  db.pragma(`cache_size = -${MEMORY_PAGE_CACHE_KIB}`);
  return db;
}
