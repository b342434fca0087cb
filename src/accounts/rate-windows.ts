import {
  type Ceiling,
  type CountsTaken,
  MemoryRateCounts,
  type RateCounts,
  type RateInstant,
  windowEndOf,
} from '../core/rate-counts.js';
import type { Sql } from '../db/sql.js';

/** The rate limits' counts as the accounts module keeps them: taken by the HTTP layer, forgotten on a reset. */
export interface AccountRateCounts extends RateCounts {
  /** Deletes the counts whose keys start with one of `prefixes` (an account's and its keys'), through `tx`. */
  forget(tx: Sql, prefixes: readonly string[]): Promise<void>;
}

/**
 * Where the counts live: in this process's memory on SQLite (one sandbox holds the database, and a
 * request costs a few map lookups), in the database's `rate_windows` over PostgreSQL, so that the
 * ceilings count the requests of every replica together.
 */
export function rateCountsFor(db: Sql): AccountRateCounts {
  if (db.engine === 'postgres') return new PostgresRateCounts(db);
  const memory = new MemoryRateCounts();
  return {
    take: (ceilings, at, enforce) => memory.take(ceilings, at, enforce),
    forget: async (_tx, prefixes) => memory.forget(prefixes),
  };
}

/**
 * The counts in `rate_windows`, exact across replicas: one round trip a request, a call of the
 * `rate_take` function (accounts/migrations.ts), which makes the ceilings' rows if missing, locks
 * them in key order, decides, counts and answers in one go. Checking and counting in separate
 * statements would let two replicas both see the 120th slot free; holding a transaction open across
 * round trips would hold the account's rows locked for as long, and cost three more of them.
 */
class PostgresRateCounts implements AccountRateCounts {
  constructor(private readonly db: Sql) {}

  async take(ceilings: readonly Ceiling[], at: RateInstant, enforce: boolean): Promise<CountsTaken> {
    const row = await this.db.get<{ counts: number[]; real_ends: (string | number | null)[] }>(
      'SELECT counts, real_ends FROM rate_take(@keys, @limits, @windowEnds, @now, @real, @frozen, @enforce)',
      {
        keys: ceilings.map((ceiling) => ceiling.key),
        limits: ceilings.map((ceiling) => ceiling.limit),
        windowEnds: ceilings.map((ceiling) => windowEndOf(ceiling, at.now)),
        now: at.now,
        real: at.real,
        frozen: at.frozen,
        enforce,
      },
    );
    if (!row) throw new Error('rate_take answered no row');
    // `pg` reads an array of BIGINT as strings; these are milliseconds, well inside a double.
    return {
      counts: row.counts,
      realEnds: row.real_ends.map((end) => (end === null ? undefined : Number(end))),
    };
  }

  async forget(tx: Sql, prefixes: readonly string[]): Promise<void> {
    if (prefixes.length === 0) return;
    // Each prefix is a range of the byte-ordered primary key: [prefix, the prefix's next string).
    await tx.run(
      `DELETE FROM rate_windows w USING unnest(@froms::text[], @tos::text[]) AS p(from_key, to_key)
        WHERE w.key >= p.from_key AND w.key < p.to_key`,
      { froms: prefixes, tos: prefixes.map(nextPrefix) },
    );
  }
}

/** The first string after every string that starts with `prefix`, in byte order. */
function nextPrefix(prefix: string): string {
  const last = prefix.charCodeAt(prefix.length - 1);
  return prefix.slice(0, -1) + String.fromCharCode(last + 1);
}
