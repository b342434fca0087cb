import type Database from 'better-sqlite3';
import type pg from 'pg';
import { LEGACY_MIGRATIONS } from './legacy-migrations.js';

/**
 * Each module owns its tables and the steps that make and change them, one list a engine, append
 * only: never edit a step that has shipped, add the next one. `schema_versions` records how many of
 * each module's steps have run. Times are integer milliseconds on the owning account's clock.
 */
export interface Migrations {
  readonly sqlite: readonly string[];
  readonly postgres: readonly string[];
}

/** Tables and their steps under one owner's name, as `schema_versions` records them. */
export interface OwnedTables {
  readonly name: string;
  readonly migrations: Migrations;
}

/** The database layer's own table: values made once, at the first start, such as secrets. */
export const SETTINGS: OwnedTables = {
  name: 'settings',
  migrations: {
    sqlite: ['CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;'],
    postgres: ['CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);'],
  },
};

/**
 * The owners whose first step is exactly the tables of the last legacy migration: a database brought
 * that far is recorded at step 1 of each.
 */
const LEGACY_OWNERS = [
  'settings',
  'accounts',
  'clock',
  'events',
  'shipments',
  'labels',
  'tracking',
  'webhooks',
  'faults',
];

/** What `PRAGMA user_version` holds from here on: above every legacy number, so older sandboxes refuse. */
const PAST_LEGACY = LEGACY_MIGRATIONS.length + 1;

export class NewerSchemaError extends Error {}

/** Refuses a database whose schema was written by a newer sandbox than this one. */
function checkNotNewer(
  recorded: ReadonlyMap<string, number>,
  owners: readonly OwnedTables[],
  steps: (owner: OwnedTables) => number,
): void {
  const known = new Map(owners.map((owner) => [owner.name, steps(owner)]));
  for (const [name, version] of recorded) {
    const knows = known.get(name);
    if (knows === undefined || version > knows) {
      throw new NewerSchemaError(
        `The database was written by a newer sandbox: its ${name} tables are at version ${version}, ` +
          `this sandbox knows ${knows ?? 'none'} of theirs. Start a sandbox of that version or newer.`,
      );
    }
  }
}

/**
 * Brings a SQLite database's tables up to date, owner by owner in the order given (an owner's tables
 * may refer to earlier owners'). Each step runs in a transaction with its record.
 */
export function migrateSqlite(connection: Database.Database, owners: readonly OwnedTables[]): void {
  const hasVersions =
    connection
      .prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_versions'")
      .get() !== undefined;
  if (!hasVersions) {
    const legacy = connection.pragma('user_version', { simple: true }) as number;
    if (legacy > LEGACY_MIGRATIONS.length) {
      throw new NewerSchemaError(
        `The database was written by a newer sandbox (schema ${legacy}, this one knows ${LEGACY_MIGRATIONS.length}).`,
      );
    }
    connection.transaction(() => {
      for (let version = legacy; legacy > 0 && version < LEGACY_MIGRATIONS.length; version++)
        connection.exec(LEGACY_MIGRATIONS[version] as string);
      connection.exec(
        'CREATE TABLE schema_versions (name TEXT PRIMARY KEY, version INTEGER NOT NULL) STRICT',
      );
      if (legacy > 0) {
        const record = connection.prepare('INSERT INTO schema_versions (name, version) VALUES (?, 1)');
        for (const name of LEGACY_OWNERS) record.run(name);
      }
      connection.pragma(`user_version = ${PAST_LEGACY}`);
    })();
  }
  const recorded = new Map(
    (
      connection.prepare('SELECT name, version FROM schema_versions').all() as {
        name: string;
        version: number;
      }[]
    ).map((row) => [row.name, row.version]),
  );
  checkNotNewer(recorded, owners, (owner) => owner.migrations.sqlite.length);
  const record = connection.prepare(
    'INSERT INTO schema_versions (name, version) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET version = excluded.version',
  );
  for (const owner of owners) {
    const steps = owner.migrations.sqlite;
    for (let version = recorded.get(owner.name) ?? 0; version < steps.length; version++) {
      connection.transaction(() => {
        connection.exec(steps[version] as string);
        record.run(owner.name, version + 1);
      })();
    }
  }
}

/**
 * Brings a PostgreSQL database's tables up to date, as `migrateSqlite` does, under an advisory lock:
 * replicas started together over an empty database wait while the first makes the tables, then find
 * them made. The lock is the schema's own (`search_path`), so sandboxes in other schemas of the same
 * database do not wait for one another.
 */
export async function migratePostgres(pool: pg.Pool, owners: readonly OwnedTables[]): Promise<void> {
  const client = await pool.connect();
  let lockKey: number | undefined;
  try {
    const where = (
      await client.query<{ schema: string | null; path: string }>(
        "SELECT current_schema() AS schema, current_setting('search_path') AS path",
      )
    ).rows[0];
    // PostgreSQL's own words for this ("no schema has been selected to create in") name neither.
    if (!where?.schema)
      throw new Error(
        `no schema of the database's search_path (${where?.path}) exists: create it (CREATE SCHEMA …) or name another in the database URL`,
      );
    lockKey = (
      await client.query<{ key: number }>("SELECT hashtext('shipping-sandbox schema ' || $1) AS key", [
        where.schema,
      ])
    ).rows[0]?.key;
    await client.query('SELECT pg_advisory_lock($1)', [lockKey]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_versions (name TEXT PRIMARY KEY, version INTEGER NOT NULL)',
    );
    const rows = (
      await client.query<{ name: string; version: number }>('SELECT name, version FROM schema_versions')
    ).rows;
    const recorded = new Map(rows.map((row) => [row.name, row.version]));
    checkNotNewer(recorded, owners, (owner) => owner.migrations.postgres.length);
    // Every step due, and its record, in one transaction: PostgreSQL's DDL is transactional, so a
    // start that fails half-way leaves the schema as it found it.
    const steps: string[] = [];
    const records: [string, number][] = [];
    for (const owner of owners) {
      const known = owner.migrations.postgres;
      const from = recorded.get(owner.name) ?? 0;
      if (from === known.length) continue;
      steps.push(...known.slice(from));
      records.push([owner.name, known.length]);
    }
    if (steps.length > 0) {
      await client.query('BEGIN');
      try {
        await client.query(steps.join(';\n'));
        for (const [name, version] of records)
          await client.query(
            'INSERT INTO schema_versions (name, version) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET version = excluded.version',
            [name, version],
          );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
    }
  } finally {
    if (lockKey !== undefined) await client.query('SELECT pg_advisory_unlock($1)', [lockKey]).catch(() => {});
    client.release();
  }
}
