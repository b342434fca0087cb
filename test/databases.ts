import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { openDatabase } from '../src/db/database.js';
import { postgresDatabase } from '../src/db/postgres.js';
import type { SandboxDatabase } from '../src/db/sql.js';
import { sqliteDatabase } from '../src/db/sqlite.js';

/**
 * The engine a test run uses: SQLite in memory, or, in the run on PostgreSQL (vitest.config.ts's
 * `postgres` project, which sets SANDBOX_TEST_ENGINE), a real PostgreSQL server that the run started
 * itself (test/postgres-setup.ts). Each sandbox gets a schema of its own in one database, so sandboxes
 * are as separate as SQLite's in-memory ones, and a schema is made far faster than a database.
 */
export const TEST_ENGINE: 'sqlite' | 'postgres' =
  process.env.SANDBOX_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The URL of the run's PostgreSQL server's database for sandboxes (test/postgres-setup.ts). */
    postgresUrl: string;
  }
}

let made = 0;

/** The URL of a new, empty schema in the run's PostgreSQL database: everything in it is the sandbox's. */
export async function newPostgresSchema(serverUrl = inject('postgresUrl')): Promise<string> {
  const schema = `sandbox_${process.pid}_${++made}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** What a test's sandbox keeps its data in, on the run's engine. */
export async function testDatabase(): Promise<SandboxDatabase> {
  // Alone in its schema, a test's sandbox keeps what it reads as soon as it starts, as one over SQLite.
  if (TEST_ENGINE === 'postgres')
    return postgresDatabase(await newPostgresSchema(), { poolSize: 4, writerLockTiming: { graceMs: 0 } });
  return sqliteDatabase(openDatabase(':memory:'), ':memory:');
}

/** The `--database` of a sandbox a test starts as a server or a process, on the run's engine. */
export async function testDatabaseUrl(): Promise<string | undefined> {
  return TEST_ENGINE === 'postgres' ? newPostgresSchema() : undefined;
}
