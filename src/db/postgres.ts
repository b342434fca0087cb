import pg from 'pg';
import { isDatabaseUnavailable } from '../core/storage-errors.js';
import { storableText } from '../core/text.js';
import { migratePostgres } from './migrations.js';
import { PipelinedConnection } from './pipelined-connection.js';
import { describeUrl } from './postgres-url.js';
import type { Params, SandboxDatabase, Sql } from './sql.js';
import { WRITER_LOCK_TIMING, WriterLock, type WriterLockTiming } from './writer-lock.js';

/** A statement's text in PostgreSQL's numbered form, and where each number's value comes from. */
interface Numbered {
  text: string;
  /** The parameter names in the order of their numbers; null for positional `?` parameters. */
  names: string[] | null;
  /** The name of the prepared statement on each connection. */
  name: string;
}

/**
 * Rewrites `@name` and `?` parameters as `$1`, `$2`…, outside quoted text. A name used twice keeps
 * its number.
 */
export function numberParameters(text: string): Omit<Numbered, 'name'> {
  const names: string[] = [];
  let positional = 0;
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const char = text[i] as string;
    if (char === "'" || char === '"') {
      const end = text.indexOf(char, i + 1);
      const stop = end === -1 ? text.length : end + 1;
      out += text.slice(i, stop);
      i = stop - 1;
    } else if (char === '?') {
      positional += 1;
      out += `$${positional}`;
    } else if (char === '@' && /[A-Za-z_]/.test(text[i + 1] ?? '')) {
      let end = i + 1;
      while (end < text.length && /\w/.test(text[end] as string)) end++;
      const name = text.slice(i + 1, end);
      let number = names.indexOf(name) + 1;
      if (number === 0) number = names.push(name);
      out += `$${number}`;
      i = end - 1;
    } else {
      out += char;
    }
  }
  if (positional > 0 && names.length > 0) throw new Error(`mixed ? and @ parameters: ${text}`);
  return { text: out, names: positional > 0 ? null : names };
}

// BIGINT (int8) columns hold milliseconds and sequence numbers, all well inside a double's 2^53:
// read them as numbers, as SQLite's integers are.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/** What runs a statement: the pipelined connection, or a transaction's own. */
interface Queryer {
  query(config: pg.QueryConfig): Promise<pg.QueryResult>;
}

abstract class PostgresQueries implements Sql {
  readonly engine = 'postgres' as const;

  constructor(protected readonly statements: Map<string, Numbered>) {}

  protected abstract queryer(): Queryer;

  private numbered(text: string): Numbered {
    let numbered = this.statements.get(text);
    if (!numbered) {
      numbered = { ...numberParameters(text), name: `s${this.statements.size + 1}` };
      this.statements.set(text, numbered);
    }
    return numbered;
  }

  private config(text: string, params: Params | undefined, rowMode?: 'array'): pg.QueryConfig {
    const numbered = this.numbered(text);
    let values: unknown[] = [];
    if (params !== undefined) {
      if (numbered.names === null) values = (params as readonly unknown[]).map(toValue);
      else {
        const named = params as Readonly<Record<string, unknown>>;
        values = numbered.names.map((name) => toValue(named[name]));
      }
    }
    return { name: numbered.name, text: numbered.text, values, ...(rowMode ? { rowMode } : {}) };
  }

  async all<Row>(text: string, params?: Params): Promise<Row[]> {
    return (await this.queryer().query(this.config(text, params))).rows as Row[];
  }

  async get<Row>(text: string, params?: Params): Promise<Row | undefined> {
    return (await this.queryer().query(this.config(text, params))).rows[0] as Row | undefined;
  }

  async column<Value>(text: string, params?: Params): Promise<Value[]> {
    const result = await this.queryer().query(this.config(text, params, 'array'));
    return (result.rows as unknown as unknown[][]).map((row) => row[0] as Value);
  }

  async value<Value>(text: string, params?: Params): Promise<Value | undefined> {
    const result = await this.queryer().query(this.config(text, params, 'array'));
    return (result.rows as unknown as unknown[][])[0]?.[0] as Value | undefined;
  }

  async run(text: string, params?: Params): Promise<number> {
    return (await this.queryer().query(this.config(text, params))).rowCount ?? 0;
  }

  abstract transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T>;
}

/**
 * How long the oldest statement on a pipelined connection may wait for its answer before the next
 * statements go to another connection. Under load a statement's answer takes well under a
 * millisecond; one that waits this long is slow or waits for a lock.
 */
const STALLED_AFTER_MS = 20;
/** Pipelined connections at most: as many statements may be slow at once before the next waits behind one. */
const PIPELINED_CONNECTIONS = 4;

/** `undefined` is SQL's NULL, as better-sqlite3 reads a missing named parameter's place. */
const toValue = (value: unknown) =>
  value === undefined ? null : typeof value === 'string' ? storableText(value) : value;

/**
 * `Sql` over PostgreSQL: a statement on its own goes out on the pipelined connection; a transaction
 * holds one of the pool's.
 */
export class PostgresSql extends PostgresQueries {
  constructor(
    readonly pool: pg.Pool,
    private readonly pipelined: readonly PipelinedConnection[],
    /** Nothing is written before the replicas' lock is held (writer-lock.ts). */
    private readonly writers: Pick<WriterLock, 'held' | 'transactionBegins'>,
    private readonly stalledAfterMs = STALLED_AFTER_MS,
  ) {
    super(new Map());
  }

  protected queryer(): Queryer {
    const waiting = this.writers.held();
    if (waiting === undefined) return this.connection();
    return { query: (config) => waiting.then(() => this.connection().query(config)) };
  }

  /**
   * The first pipelined connection that is not stalled: the requests in flight share one as long as
   * it keeps answering, which is what saves the wake-ups, and spill over to the next (opened then)
   * when a slow statement holds it up, and to the pool when every one is. A statement already sent
   * behind a slow one waits for it (and fails with it, should it time out: pg then ends the
   * connection, there being no other way to take back what is on the wire).
   */
  private connection(): Queryer {
    const now = performance.now();
    for (const connection of this.pipelined)
      if (!connection.stalled(now, this.stalledAfterMs)) return connection;
    // Every one held up: the pool's connections wait behind nobody.
    return this.pool;
  }

  async transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T> {
    await this.writers.held();
    // Until it has ended, a read outside it may find what it is changing as it was: none is kept.
    const ended = this.writers.transactionBegins();
    try {
      return await this.inTransaction(work);
    } finally {
      ended();
    }
  }

  private async inTransaction<T>(work: (tx: Sql) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    // The pool listens for a connection's errors only while it is idle: one that breaks between two
    // statements of a transaction (the server ends it) would otherwise be an uncaught error. The
    // next statement fails on it.
    const onError = (error: Error) => {
      broken = error;
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const tx = new PostgresTransaction(client, this.statements, 0);
      try {
        const result = await work(tx);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch((rollback: Error) => {
          broken = rollback;
        });
        throw error;
      } finally {
        tx.end();
      }
    } catch (error) {
      broken ??= isConnectionLost(error) ? (error as Error) : undefined;
      throw error;
    } finally {
      client.off('error', onError);
      // A connection that failed mid-transaction is not given to the next request.
      client.release(broken);
    }
  }
}

class PostgresTransaction extends PostgresQueries {
  private open = true;

  constructor(
    private readonly client: pg.PoolClient,
    statements: Map<string, Numbered>,
    private readonly depth: number,
  ) {
    super(statements);
  }

  end(): void {
    this.open = false;
  }

  protected queryer(): pg.PoolClient {
    if (!this.open) throw new Error('a statement ran after its transaction ended');
    return this.client;
  }

  async transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T> {
    const name = `s${this.depth + 1}`;
    await this.queryer().query(`SAVEPOINT ${name}`);
    const inner = new PostgresTransaction(this.client, this.statements, this.depth + 1);
    try {
      const result = await work(inner);
      await this.client.query(`RELEASE SAVEPOINT ${name}`);
      return result;
    } catch (error) {
      await this.client.query(`ROLLBACK TO SAVEPOINT ${name}`);
      throw error;
    } finally {
      inner.end();
    }
  }
}

/** Errors that say the connection itself is gone (rather than a statement failing on a good one). */
export const isConnectionLost = isDatabaseUnavailable;

/** How long a request may wait for a connection, and a statement for its answer, before the database counts as out of reach. */
export const CONNECT_TIMEOUT_MS = 2_000;
export const STATEMENT_TIMEOUT_MS = 4_000;
/**
 * The sandbox's transactions run their statements back to back, never waiting on a client or a
 * receiver in between: one idle this long belongs to a process that stopped.
 */
export const IDLE_IN_TRANSACTION_MS = 10_000;
/** How long a replica that starts waits for the replicas' lock (the sole one steps aside in milliseconds). */
const JOIN_WAIT_MS = 30_000;

/**
 * A sandbox's database over PostgreSQL: a pool of connections to the URL's database (TLS and the
 * rest as the URL says: `sslmode`, `options=-c search_path=…`). A connection is waited for at most
 * CONNECT_TIMEOUT_MS and a statement at most STATEMENT_TIMEOUT_MS, so that while the server is down
 * or out of reach a request fails within seconds (`503 service_unavailable`) rather than hanging; the
 * pool opens new connections once it is back. A transaction left idle for IDLE_IN_TRANSACTION_MS is
 * ended by the server: a replica that stalls inside one (its host paused, its process stopped) would
 * otherwise hold the rows it locked, and so the other replicas' work on that account, until it woke.
 */
export function postgresDatabase(
  url: string,
  options: {
    poolSize?: number;
    onIdleError?: (error: Error) => void;
    idleInTransactionMs?: number;
    /** See STALLED_AFTER_MS. */
    stalledAfterMs?: number;
    /** How long a pipelined connection with nothing to do stays open (IDLE_MS). */
    pipelinedIdleMs?: number;
    /** See WRITER_LOCK_TIMING. */
    writerLockTiming?: Partial<WriterLockTiming>;
  } = {},
): SandboxDatabase {
  const idleMs = Math.round(options.idleInTransactionMs ?? IDLE_IN_TRANSACTION_MS);
  const connection = {
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    query_timeout: STATEMENT_TIMEOUT_MS,
    application_name: 'shipping-sandbox',
    // A connection idle behind a NAT or a firewall is kept known to it, rather than silently dropped
    // (the system's default first probe comes after two hours).
    keepAlive: true,
    keepAliveInitialDelayMillis: 30_000,
  };
  // Set on each new connection before it is used, not in its startup packet (pg's
  // `idle_in_transaction_session_timeout` option), which a pooler such as PgBouncer refuses for a
  // parameter it does not know. A connection whose SET fails is ended, and its request fails.
  const prepare = (client: pg.ClientBase) =>
    client.query(`SET idle_in_transaction_session_timeout = ${idleMs}`);
  const pool = new pg.Pool({ ...connection, max: options.poolSize ?? 10, onConnect: prepare });
  // A connection that breaks while idle (the server restarts) is dropped by the pool; without a
  // listener, its error would end the process.
  pool.on('error', (error) => options.onIdleError?.(error));
  const pipelined = Array.from(
    { length: PIPELINED_CONNECTIONS },
    () => new PipelinedConnection(connection, prepare, options.onIdleError, options.pipelinedIdleMs),
  );
  const writers = new WriterLock(connection, { ...WRITER_LOCK_TIMING, ...options.writerLockTiming });
  const sql = new PostgresSql(pool, pipelined, writers, options.stalledAfterMs);
  return {
    engine: 'postgres',
    sql,
    memory: writers,
    description: `PostgreSQL, ${describeUrl(url)}`,
    async migrate(owners) {
      await migratePostgres(pool, owners).catch((error: unknown) => {
        throw notUsable(error)
          ? new Error(`cannot use the database at ${describeUrl(url)}: ${whatWentWrong(error)}`)
          : error;
      });
      // Joins the replicas before serving: a sole replica asked to step aside does so at once.
      await writers.held(JOIN_WAIT_MS);
    },
    async ping(timeoutMs) {
      // A replica that does not hold the replicas' lock serves nothing.
      const joined = await (writers.held(timeoutMs) ?? Promise.resolve()).then(
        () => true,
        () => false,
      );
      if (!joined) return false;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      });
      try {
        return await Promise.race([
          pool.query('SELECT 1').then(
            () => true,
            () => false,
          ),
          late,
        ]);
      } finally {
        clearTimeout(timer);
      }
    },
    connections: () => {
      const open = pipelined.filter((connection) => connection.open);
      return {
        total: pool.totalCount + open.length,
        idle: pool.idleCount + open.filter((connection) => !connection.busy).length,
        waiting: pool.waitingCount,
      };
    },
    close: async () => {
      await Promise.all(pipelined.map((c) => c.close()));
      await pool.end();
      await writers.close();
    },
  };
}

/**
 * Whether a start-up failure is the URL's server, login or database rather than the schema's state:
 * said with the place the URL names, which the driver's message (`connect ECONNREFUSED …`) does not.
 */
function notUsable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return isDatabaseUnavailable(error) || (typeof code === 'string' && /^(28|3D)/.test(code));
}

/** An error's message; its code where it has none (Node's AggregateError of a refused `localhost`). */
const whatWentWrong = (error: unknown) =>
  (error as Error).message || String((error as { code?: unknown }).code ?? error);
