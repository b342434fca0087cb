import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type PostgresServer, startPostgresServer } from '../scripts/embedded-postgres.js';
import { numberParameters, PostgresSql } from '../src/db/postgres.js';
import type { Sql } from '../src/db/sql.js';
import { SqliteSql } from '../src/db/sqlite.js';

let server: PostgresServer;
const pools: pg.Pool[] = [];

beforeAll(async () => {
  server = await startPostgresServer();
}, 60_000);

afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end()));
  await server?.stop();
});

const TABLE = {
  sqlite: 'CREATE TABLE t (seq INTEGER PRIMARY KEY AUTOINCREMENT, a TEXT, n INTEGER)',
  postgres: 'CREATE TABLE t (seq BIGSERIAL PRIMARY KEY, a TEXT, n BIGINT)',
};

const engines: Record<string, () => Promise<Sql>> = {
  sqlite: async () => {
    const connection = new Database(':memory:');
    connection.exec(TABLE.sqlite);
    return new SqliteSql(connection);
  },
  postgres: async () => {
    const pool = new pg.Pool({ connectionString: await createDatabase(server.url) });
    // An idle connection ended by the server's stop is no error of the test's.
    pool.on('error', () => {});
    pools.push(pool);
    await pool.query(TABLE.postgres);
    return new PostgresSql(pool);
  },
};

describe('numbering parameters for PostgreSQL', () => {
  it('numbers named parameters once each, and positional ones in order, outside quoted text', () => {
    expect(numberParameters("SELECT @a, '@b ?', @c, @a")).toEqual({
      text: "SELECT $1, '@b ?', $2, $1",
      names: ['a', 'c'],
    });
    expect(numberParameters('SELECT ? WHERE x = ?')).toEqual({ text: 'SELECT $1 WHERE x = $2', names: null });
    expect(() => numberParameters('SELECT ?, @a')).toThrow(/mixed/);
  });
});

describe.each(Object.keys(engines))('the %s engine', (engine) => {
  let sql: Sql;
  beforeAll(async () => {
    sql = await (engines[engine] as () => Promise<Sql>)();
  });

  it('runs statements with named and positional parameters, and reads rows, columns and values', async () => {
    expect(await sql.run('INSERT INTO t (a, n) VALUES (@a, @n)', { a: 'x', n: 1_795_770_540_000 })).toBe(1);
    expect(await sql.get('INSERT INTO t (a, n) VALUES (?, ?) RETURNING seq', ['y', 2])).toEqual({ seq: 2 });
    expect(await sql.all('SELECT a, n FROM t ORDER BY seq')).toEqual([
      { a: 'x', n: 1_795_770_540_000 },
      { a: 'y', n: 2 },
    ]);
    expect(await sql.column('SELECT a FROM t ORDER BY seq')).toEqual(['x', 'y']);
    expect(await sql.value('SELECT count(*) FROM t')).toBe(2);
    expect(await sql.value('SELECT a FROM t WHERE seq = @seq', { seq: 99 })).toBeUndefined();
    expect(await sql.get('SELECT a FROM t WHERE a = @a', { a: undefined })).toBeUndefined();
  });

  it('commits a transaction that resolves and rolls back one that throws, savepoints too', async () => {
    await sql.run('DELETE FROM t');
    await expect(
      sql.transaction(async (tx) => {
        await tx.run("INSERT INTO t (a) VALUES ('lost')");
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const result = await sql.transaction(async (tx) => {
      await tx.run("INSERT INTO t (a) VALUES ('kept')");
      await tx
        .transaction(async (inner) => {
          await inner.run("INSERT INTO t (a) VALUES ('inner lost')");
          throw new Error('inner');
        })
        .catch(() => undefined);
      await tx.transaction((inner) => inner.run("INSERT INTO t (a) VALUES ('inner kept')"));
      return 'done';
    });
    expect(result).toBe('done');
    expect(await sql.column('SELECT a FROM t ORDER BY seq')).toEqual(['kept', 'inner kept']);
  });

  it("keeps statements from outside a transaction out of it, and transactions out of each other's way", async () => {
    await sql.run('DELETE FROM t');
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = sql.transaction(async (tx) => {
      await tx.run("INSERT INTO t (a) VALUES ('first')");
      await held;
      throw new Error('rolled back');
    });
    // While the first is open: a read from outside and a second transaction.
    const outside = sql.column('SELECT a FROM t');
    const second = sql.transaction((tx) => tx.run("INSERT INTO t (a) VALUES ('second')"));
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    await expect(first).rejects.toThrow('rolled back');
    await second;
    // The read never saw the first transaction's row, committed or not.
    expect(await outside).not.toContain('first');
    expect(await sql.column('SELECT a FROM t')).toEqual(['second']);
  });

  it('refuses a statement through a transaction that has ended', async () => {
    let kept: Sql | undefined;
    await sql.transaction(async (tx) => {
      kept = tx;
    });
    await expect((kept as Sql).run("INSERT INTO t (a) VALUES ('late')")).rejects.toThrow(/ended/);
  });
});
