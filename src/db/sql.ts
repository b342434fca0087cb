/**
 * What a store runs its SQL through, whichever engine holds the data: SQLite (better-sqlite3, in a
 * file or in memory) or PostgreSQL (`pg`, a pool). Statements are plain SQL text written once for
 * both engines where SQL allows, with named parameters (`@accountId`) or positional ones (`?`); the
 * PostgreSQL side numbers them (`$1`) once per text. Where the engines' SQL differs, a store writes
 * each (`sql.engine`).
 *
 * Every call answers through a promise, so that a store reads the same over a network round trip as
 * over SQLite's in-process one. A change that spans several stores runs inside `transaction`, whose
 * `tx` each store call of the change is given: the same connection, committed once the work
 * resolves and rolled back when it throws.
 */

import { isStorable, storableText } from '../core/text.js';
import type { MemoryPermit } from './memory-permit.js';
import type { OwnedTables } from './migrations.js';

export type Engine = 'sqlite' | 'postgres';

/** Named parameters by name (without the `@`), or positional ones in order. */
export type Params = Readonly<Record<string, unknown>> | readonly unknown[];

const storableValue = (value: unknown) => (typeof value === 'string' ? storableText(value) : value);
const needsMending = (value: unknown) => typeof value === 'string' && !isStorable(value);

/**
 * `params` with every text made storable (`core/text.ts`): what neither engine's text can hold
 * becomes U+FFFD on both. The same object, not a copy, when none needed it, as on nearly every
 * statement.
 */
export function storableParams<P extends Params>(params: P): P {
  if (Array.isArray(params)) return (params.some(needsMending) ? params.map(storableValue) : params) as P;
  const named = params as Readonly<Record<string, unknown>>;
  for (const name in named) {
    if (needsMending(named[name])) {
      const mended: Record<string, unknown> = {};
      for (const key in named) mended[key] = storableValue(named[key]);
      return mended as P;
    }
  }
  return params;
}

export interface Sql {
  readonly engine: Engine;
  /** Every row. */
  all<Row>(text: string, params?: Params): Promise<Row[]>;
  /** The first row, if any. */
  get<Row>(text: string, params?: Params): Promise<Row | undefined>;
  /** The first column of every row. */
  column<Value>(text: string, params?: Params): Promise<Value[]>;
  /** The first column of the first row, if any. */
  value<Value>(text: string, params?: Params): Promise<Value | undefined>;
  /** Runs a statement that answers no rows: how many rows it changed. */
  run(text: string, params?: Params): Promise<number>;
  /**
   * Runs `work` in a transaction: committed when it resolves, rolled back when it throws. Inside one,
   * a nested call is a savepoint. Everything the work writes goes through `tx`.
   */
  transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T>;
}

/** A store's SQL for each engine, where the two differ. */
export const dialect = <T>(sql: Pick<Sql, 'engine'>, forEach: Record<Engine, T>): T => forEach[sql.engine];

/** A sandbox's database: its engine, the SQL its stores run, and what the server does with it. */
export interface SandboxDatabase {
  readonly engine: Engine;
  readonly sql: Sql;
  /** Whether stores may keep what they read in memory now (memory-permit.ts). */
  readonly memory: MemoryPermit;
  /** What the banner and `/healthz` say it is (never a password). */
  readonly description: string;
  /** Brings every owner's tables up to date, in the order given (see migrations.ts). */
  migrate(owners: readonly OwnedTables[]): Promise<void>;
  /** Whether the database answers now, within `timeoutMs`. */
  ping(timeoutMs: number): Promise<boolean>;
  /** How its connections are used at this instant (for `/metrics`); reads no database. */
  connections(): ConnectionUse;
  close(): Promise<void>;
}

/** A database's connections at one instant. */
export interface ConnectionUse {
  /** Connections open: PostgreSQL's pool, or SQLite's one connection. */
  total: number;
  /** Of those, the ones no statement or transaction holds. */
  idle: number;
  /** Requests and background work waiting for a connection to be free. */
  waiting: number;
}
