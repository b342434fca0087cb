import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { LEGACY_MIGRATIONS } from '../src/db/legacy-migrations.js';
import { migrateSqlite, NewerSchemaError, type OwnedTables } from '../src/db/migrations.js';
import { sandboxSchema } from '../src/wiring.js';

const schema = sandboxSchema(testConfig());
/** Each owner with tables on SQLite at its last step (an owner of PostgreSQL-only tables has none here). */
const current = Object.fromEntries(
  schema
    .filter((owner) => owner.migrations.sqlite.length > 0)
    .map((owner) => [owner.name, owner.migrations.sqlite.length]),
);
const versions = (db: Database.Database) =>
  Object.fromEntries(
    (
      db.prepare('SELECT name, version FROM schema_versions').all() as { name: string; version: number }[]
    ).map((row) => [row.name, row.version]),
  );

describe("each module's migrations", () => {
  it('make a new database, record each owner at its last step, and mark it past every legacy number', () => {
    const db = new Database(':memory:');
    migrateSqlite(db, schema);
    expect(versions(db)).toEqual(current);
    expect(db.pragma('user_version', { simple: true })).toBe(LEGACY_MIGRATIONS.length + 1);
    // A second start finds nothing to do.
    migrateSqlite(db, schema);
    expect(versions(db).shipments).toBe(schema.find((o) => o.name === 'shipments')?.migrations.sqlite.length);
  });

  it('run a step added later, and only that one', () => {
    const db = new Database(':memory:');
    migrateSqlite(db, schema);
    const faults = schema.find((owner) => owner.name === 'faults') as OwnedTables;
    const grown: OwnedTables = {
      name: 'faults',
      migrations: {
        ...faults.migrations,
        sqlite: [...faults.migrations.sqlite, 'ALTER TABLE faults ADD COLUMN note TEXT'],
      },
    };
    migrateSqlite(
      db,
      schema.map((owner) => (owner.name === 'faults' ? grown : owner)),
    );
    expect(versions(db).faults).toBe(faults.migrations.sqlite.length + 1);
    expect(
      db.prepare("SELECT count(*) FROM pragma_table_info('faults') WHERE name = 'note'").pluck().get(),
    ).toBe(1);
  });

  it('refuse a database whose tables a newer sandbox wrote, naming the owner', () => {
    const db = new Database(':memory:');
    migrateSqlite(db, schema);
    db.prepare("UPDATE schema_versions SET version = version + 1 WHERE name = 'labels'").run();
    expect(() => migrateSqlite(db, schema)).toThrow(NewerSchemaError);
    expect(() => migrateSqlite(db, schema)).toThrow(/labels tables are at version 2/);
    const other = new Database(':memory:');
    migrateSqlite(other, schema);
    other.prepare("INSERT INTO schema_versions (name, version) VALUES ('parcels', 1)").run();
    expect(() => migrateSqlite(other, schema)).toThrow(
      /parcels tables are at version 1, this sandbox knows none/,
    );
  });

  it('bring a database of the numbered legacy schema up from each owner’s first step to its last', () => {
    const db = new Database(':memory:');
    for (const step of LEGACY_MIGRATIONS.slice(0, 12)) db.exec(step);
    db.pragma('user_version = 12');
    migrateSqlite(db, schema);
    // Recorded at each owner's first step (the legacy tables), then the later steps ran: a first step
    // run again would have failed on tables that exist.
    expect(versions(db)).toEqual(current);
    expect(db.pragma('user_version', { simple: true })).toBe(LEGACY_MIGRATIONS.length + 1);
  });

  it('refuse a legacy number above every legacy migration, as before', () => {
    const db = new Database(':memory:');
    db.pragma(`user_version = ${LEGACY_MIGRATIONS.length + 5}`);
    expect(() => migrateSqlite(db, schema)).toThrow(/newer sandbox/);
  });
});
