import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type PostgresServer, startPostgresServer } from '../scripts/embedded-postgres.js';
import { numberParameters, postgresDatabase } from '../src/db/postgres.js';
import type { SandboxDatabase, Sql } from '../src/db/sql.js';
import { SqliteSql } from '../src/db/sqlite.js';

let server: PostgresServer;
const databases: SandboxDatabase[] = [];

beforeAll(async () => {
  server = await startPostgresServer();
}, 60_000);

afterAll(async () => {
  await Promise.all(databases.map((database) => database.close()));
  await server?.stop();
});

/** A fresh database on the test's server, as the sandbox opens one. */
async function openPostgres(options: Parameters<typeof postgresDatabase>[1] = {}): Promise<Sql> {
  const database = postgresDatabase(await createDatabase(server.url), options);
  databases.push(database);
  return database.sql;
}

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
    const sql = await openPostgres();
    await sql.run(TABLE.postgres);
    return sql;
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

describe('statements on their own over PostgreSQL (pipelined)', () => {
  const backend = 'SELECT pg_backend_pid() AS pid';

  it('sends those in flight on one connection, each with its own answer or error', async () => {
    // Never spilling to another connection, however slow the machine.
    const sql = await openPostgres({ stalledAfterMs: 60_000 });
    await sql.run(TABLE.postgres);
    await sql.run('ALTER TABLE t ADD CONSTRAINT t_a UNIQUE (a)');
    await sql.run("INSERT INTO t (a) VALUES ('taken')");
    const writes = Array.from({ length: 40 }, (_, i) =>
      sql.run('INSERT INTO t (a, n) VALUES (@a, @n)', { a: i === 17 ? 'taken' : `row ${i}`, n: i }),
    );
    const pids = Array.from({ length: 10 }, () => sql.value<number>('SELECT pg_backend_pid()'));
    const settled = await Promise.allSettled(writes);
    expect(settled.filter((outcome) => outcome.status === 'rejected')).toHaveLength(1);
    expect((settled[17] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
    expect(new Set(await Promise.all(pids)).size).toBe(1);
    expect(await sql.value('SELECT count(*) FROM t')).toBe(40);
  });

  it('sends the next ones on another connection while a slow one holds the first up', async () => {
    const sql = await openPostgres({ stalledAfterMs: 0 });
    const first = await sql.value<number>('SELECT pg_backend_pid()');
    const slow = sql.get<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.5)');
    // Sent behind the slow one, it would wait half a second; on another connection it answers first.
    const quick = sql.get<{ pid: number }>(backend);
    const winner = await Promise.race([quick.then(() => 'quick'), slow.then(() => 'slow')]);
    expect(winner).toBe('quick');
    expect((await slow)?.pid).toBe(first);
    expect((await quick)?.pid).not.toBe(first);
  });

  it('sends the next ones through the pool while every pipelined connection is held up', async () => {
    const sql = await openPostgres({ stalledAfterMs: 0 });
    // Four slow statements, each on the next pipelined connection as the one before is held up.
    const slow = Array.from({ length: 4 }, () => sql.get<{ pid: number }>(`${backend}, pg_sleep(0.5)`));
    const quick = sql.get<{ pid: number }>(backend);
    const winner = await Promise.race([quick.then(() => 'quick'), Promise.any(slow).then(() => 'slow')]);
    expect(winner).toBe('quick');
    const pids = new Set((await Promise.all(slow)).map((row) => row?.pid));
    expect(pids.size).toBe(4);
    expect(pids.has((await quick)?.pid)).toBe(false);
  });

  it('closes a pipelined connection that has had nothing to do, and opens one again when needed', async () => {
    const database = postgresDatabase(await createDatabase(server.url), { pipelinedIdleMs: 50 });
    databases.push(database);
    expect(await database.sql.value('SELECT 1')).toBe(1);
    expect(database.connections().total).toBe(1);
    await expect.poll(() => database.connections().total).toBe(0);
    expect(await database.sql.value('SELECT 2')).toBe(2);
  });

  it('opens a new connection for the next statement once the server ended it', async () => {
    const sql = await openPostgres();
    const pid = await sql.value<number>('SELECT pg_backend_pid()');
    // Ended from one of the pool's connections, as a restarted server or an administrator would.
    await sql.transaction((tx) => tx.run('SELECT pg_terminate_backend(?)', [pid]));
    await expect.poll(() => sql.value<number>('SELECT pg_backend_pid()').catch(() => pid)).not.toBe(pid);
  });
});
