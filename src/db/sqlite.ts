import type Database from 'better-sqlite3';
import { ALWAYS_GRANTED } from './memory-permit.js';
import { migrateSqlite } from './migrations.js';
import { type ConnectionUse, type Params, type SandboxDatabase, type Sql, storableParams } from './sql.js';

type Statement = Database.Statement<unknown[], unknown>;

/** No transaction of the sandbox holds SQLite's connection anywhere near this long. */
const STUCK_MS = 10_000;

/**
 * `Sql` over one better-sqlite3 connection. SQLite itself is synchronous: a statement runs within the
 * call and its result is handed over through an already resolved promise. What needs care is the
 * transaction: its work may wait between statements (on the promises of its own statements), and
 * other requests run in those gaps. On one connection, their statements would land inside the open
 * transaction, seeing what it has not committed and committing or rolling back with it. So while a
 * transaction is open, statements from outside it and other transactions wait their turn; inside it,
 * statements go through its `tx` and run at once.
 */
export class SqliteSql implements Sql {
  readonly engine = 'sqlite' as const;
  private readonly statements = new Map<string, Statement>();
  /** Whether a transaction holds the connection; those waiting for it, in order. */
  private held = false;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly connection: Database.Database) {}

  all<Row>(text: string, params?: Params): Promise<Row[]> {
    return this.outside(() => this.allNow<Row>(text, params));
  }

  get<Row>(text: string, params?: Params): Promise<Row | undefined> {
    return this.outside(() => this.getNow<Row>(text, params));
  }

  column<Value>(text: string, params?: Params): Promise<Value[]> {
    return this.outside(() => this.columnNow<Value>(text, params));
  }

  value<Value>(text: string, params?: Params): Promise<Value | undefined> {
    return this.outside(() => this.valueNow<Value>(text, params));
  }

  run(text: string, params?: Params): Promise<number> {
    return this.outside(() => this.runNow(text, params));
  }

  transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T> {
    const begin = async (): Promise<T> => {
      try {
        this.statement('BEGIN').run();
        const tx = new SqliteTransaction(this, 0);
        try {
          const result = await work(tx);
          this.statement('COMMIT').run();
          return result;
        } catch (error) {
          if (this.connection.inTransaction) this.statement('ROLLBACK').run();
          throw error;
        } finally {
          tx.end();
        }
      } finally {
        this.release();
      }
    };
    const turn = this.acquire();
    return turn ? turn.then(begin) : begin();
  }

  /** Runs `now` at once when no transaction holds the connection, else once it is free. */
  private outside<T>(now: () => T): Promise<T> {
    if (!this.held) {
      try {
        return Promise.resolve(now());
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return (this.acquire() as Promise<void>).then(() => {
      try {
        return now();
      } finally {
        this.release();
      }
    });
  }

  /**
   * Takes the connection: undefined when it was free, else a promise of its turn. A turn that does not
   * come within STUCK_MS is a statement sent to the database from inside a transaction instead of
   * through its `tx`, waiting for the transaction that waits for it: said, rather than hung.
   */
  private acquire(): Promise<void> | undefined {
    if (!this.held) {
      this.held = true;
      return undefined;
    }
    return new Promise((resolve, reject) => {
      const turn = () => {
        clearTimeout(stuck);
        resolve();
      };
      const stuck = setTimeout(() => {
        const index = this.waiting.indexOf(turn);
        if (index !== -1) this.waiting.splice(index, 1);
        reject(
          new Error(
            `waited ${STUCK_MS / 1000} s for the SQLite connection: a statement inside a transaction not sent through its tx?`,
          ),
        );
      }, STUCK_MS);
      stuck.unref();
      this.waiting.push(turn);
    });
  }

  /** The connection's use now: held by a transaction or not, and how many wait for their turn. */
  connections(): ConnectionUse {
    return { total: 1, idle: this.held ? 0 : 1, waiting: this.waiting.length };
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }

  /** The prepared statement of `text`, made once: texts are the stores' constants. */
  statement(text: string): Statement {
    let statement = this.statements.get(text);
    if (!statement) {
      statement = this.connection.prepare(text);
      this.statements.set(text, statement);
    }
    return statement;
  }

  allNow<Row>(text: string, params: Params | undefined): Row[] {
    const statement = this.statement(text);
    return (params === undefined ? statement.all() : statement.all(bind(params))) as Row[];
  }

  getNow<Row>(text: string, params: Params | undefined): Row | undefined {
    const statement = this.statement(text);
    return (params === undefined ? statement.get() : statement.get(bind(params))) as Row | undefined;
  }

  // A plucking statement answers its first column as the row itself. Turned on and off within one
  // synchronous call, so no other call sees the statement plucking.
  columnNow<Value>(text: string, params: Params | undefined): Value[] {
    const statement = this.statement(text).pluck(true);
    try {
      return (params === undefined ? statement.all() : statement.all(bind(params))) as Value[];
    } finally {
      statement.pluck(false);
    }
  }

  valueNow<Value>(text: string, params: Params | undefined): Value | undefined {
    const statement = this.statement(text).pluck(true);
    try {
      return (params === undefined ? statement.get() : statement.get(bind(params))) as Value | undefined;
    } finally {
      statement.pluck(false);
    }
  }

  runNow(text: string, params: Params | undefined): number {
    const statement = this.statement(text);
    return (params === undefined ? statement.run() : statement.run(bind(params))).changes;
  }
}

/**
 * A positional list as it is; named parameters as an object (better-sqlite3 reads `@name` from it);
 * text as PostgreSQL would hold it too (`storableText`).
 */
const bind = (params: Params): unknown => storableParams(params);

/** The statements of one open transaction (or savepoint, `depth` > 0): they run at once. */
class SqliteTransaction implements Sql {
  readonly engine = 'sqlite' as const;
  private open = true;

  constructor(
    private readonly sql: SqliteSql,
    private readonly depth: number,
  ) {}

  end(): void {
    this.open = false;
  }

  private now<T>(run: () => T): Promise<T> {
    if (!this.open) return Promise.reject(new Error('a statement ran after its transaction ended'));
    try {
      return Promise.resolve(run());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  all<Row>(text: string, params?: Params): Promise<Row[]> {
    return this.now(() => this.sql.allNow<Row>(text, params));
  }

  get<Row>(text: string, params?: Params): Promise<Row | undefined> {
    return this.now(() => this.sql.getNow<Row>(text, params));
  }

  column<Value>(text: string, params?: Params): Promise<Value[]> {
    return this.now(() => this.sql.columnNow<Value>(text, params));
  }

  value<Value>(text: string, params?: Params): Promise<Value | undefined> {
    return this.now(() => this.sql.valueNow<Value>(text, params));
  }

  run(text: string, params?: Params): Promise<number> {
    return this.now(() => this.sql.runNow(text, params));
  }

  async transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T> {
    if (!this.open) throw new Error('a savepoint opened after its transaction ended');
    const name = `s${this.depth + 1}`;
    this.sql.statement(`SAVEPOINT ${name}`).run();
    const inner = new SqliteTransaction(this.sql, this.depth + 1);
    try {
      const result = await work(inner);
      this.sql.statement(`RELEASE ${name}`).run();
      return result;
    } catch (error) {
      // SQLite rolls a whole transaction back by itself on some failures (a full disk).
      if (this.sql.connection.inTransaction) {
        this.sql.statement(`ROLLBACK TO ${name}`).run();
        this.sql.statement(`RELEASE ${name}`).run();
      }
      throw error;
    } finally {
      inner.end();
    }
  }
}

/** A sandbox's database over SQLite (a file, or memory). */
export function sqliteDatabase(connection: Database.Database, location: string): SandboxDatabase {
  const sql = new SqliteSql(connection);
  return {
    engine: 'sqlite',
    sql,
    // The data directory's lock keeps this process the only one.
    memory: ALWAYS_GRANTED,
    description: location === ':memory:' ? 'SQLite, in memory' : `SQLite, ${location}`,
    async migrate(owners) {
      migrateSqlite(connection, owners);
    },
    // In the process itself: SQLite is always there.
    ping: async () => true,
    connections: () => sql.connections(),
    async close() {
      connection.close();
    },
  };
}
