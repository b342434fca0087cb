import type { Logger } from 'pino';
import {
  admits,
  type Ceiling,
  type CountsTaken,
  isCurrent,
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
  /** Writes what is still in memory; before the database closes. */
  close(): Promise<void>;
}

/**
 * Where the counts live: in this process's memory on SQLite (one sandbox holds the database, and a
 * request costs a few map lookups), in the database's `rate_windows` over PostgreSQL, so that the
 * ceilings count the requests of every replica together.
 */
export function rateCountsFor(db: Sql, realNow: () => number, logger: Logger): AccountRateCounts {
  if (db.engine === 'postgres') return new PostgresRateCounts(db, realNow, logger);
  const memory = new MemoryRateCounts();
  return {
    take: (ceilings, at, enforce) => memory.take(ceilings, at, enforce),
    forget: async (_tx, prefixes) => memory.forget(prefixes),
    close: async () => undefined,
  };
}

/**
 * The counts in `rate_windows`, exact across replicas where they decide: one round trip a request, a
 * call of the `rate_take` function (accounts/migrations.ts), which makes the ceilings' rows if missing,
 * locks them in key order, decides, counts and answers in one go. Checking and counting in separate
 * statements would let two replicas both see the 120th slot free; holding a transaction open across
 * round trips would hold the account's rows locked for as long, and cost three more of them.
 *
 * Where nothing is refused (the account's limits, or the server's, are off) nothing waits on the
 * count: the headers still count down, from this replica's tally (`Tally`), and its counts are added
 * to the rows every FLUSH_MS in one statement, whose answer brings the other replicas' counts in. So
 * such a request costs no round trip and locks no row that every request of the account shares.
 */
class PostgresRateCounts implements AccountRateCounts {
  private readonly tally = new Tally();
  private timer: NodeJS.Timeout | undefined;
  /** One flush at a time, in order. */
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Sql,
    private readonly realNow: () => number,
    private readonly logger: Logger,
  ) {}

  take(ceilings: readonly Ceiling[], at: RateInstant, enforce: boolean): CountsTaken | Promise<CountsTaken> {
    if (!enforce) {
      const taken = this.tally.take(ceilings, at);
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.flush().catch((error: unknown) => this.couldNotWrite(error));
      }, FLUSH_MS).unref();
      return taken;
    }
    return this.takeInDatabase(ceilings, at);
  }

  private async takeInDatabase(ceilings: readonly Ceiling[], at: RateInstant): Promise<CountsTaken> {
    // Counts of these ceilings still in the tally (their limits were off a moment ago) go in first;
    // if they cannot be written now, the request is still counted and decided on the rows.
    if (this.tally.holds(ceilings)) await this.flush().catch((error: unknown) => this.couldNotWrite(error));
    const row = await this.db.get<{ counts: number[]; real_ends: (string | number | null)[] }>(
      'SELECT counts, real_ends FROM rate_take(@keys, @limits, @windowEnds, @now, @real, @frozen, true)',
      {
        keys: ceilings.map((ceiling) => ceiling.key),
        limits: ceilings.map((ceiling) => ceiling.limit),
        windowEnds: ceilings.map((ceiling) => windowEndOf(ceiling, at.now)),
        now: at.now,
        real: at.real,
        frozen: at.frozen,
      },
    );
    if (!row) throw new Error('rate_take answered no row');
    // `pg` reads an array of BIGINT as strings; these are milliseconds, well inside a double.
    const taken = {
      counts: row.counts,
      realEnds: row.real_ends.map((end) => (end === null ? undefined : Number(end))),
    };
    this.tally.learn(ceilings, at, taken, admits(ceilings, taken.counts, true));
    return taken;
  }

  private couldNotWrite(error: unknown): void {
    this.logger.warn({ err: error }, 'rate-limit counts could not be written; trying again with the next');
  }

  /**
   * Adds the tally's counts to the rows, and learns the rows' counts from the answer. A flush that
   * fails keeps its counts for the next; the chain itself never stays failed.
   */
  flush(): Promise<void> {
    const run = this.flushing.then(async () => {
      const batch = this.tally.send();
      if (batch.length === 0) return;
      try {
        const row = await this.db.get<{ counts: (number | null)[] }>(
          'SELECT counts FROM rate_add(@keys, @windowEnds, @realEnds, @counts, @real)',
          {
            keys: batch.map((entry) => entry.key),
            windowEnds: batch.map((entry) => entry.window),
            realEnds: batch.map((entry) => entry.realEnd ?? null),
            counts: batch.map((entry) => entry.count),
            real: this.realNow(),
          },
        );
        this.tally.sent(batch, row?.counts ?? []);
      } catch (error) {
        this.tally.unsent(batch);
        throw error;
      }
    });
    this.flushing = run.catch(() => undefined);
    return run;
  }

  async forget(tx: Sql, prefixes: readonly string[]): Promise<void> {
    if (prefixes.length === 0) return;
    this.tally.forget(prefixes);
    // Each prefix is a range of the byte-ordered primary key: [prefix, the prefix's next string).
    await tx.run(
      `DELETE FROM rate_windows w USING unnest(@froms::text[], @tos::text[]) AS p(from_key, to_key)
        WHERE w.key >= p.from_key AND w.key < p.to_key`,
      { froms: prefixes, tos: prefixes.map(nextPrefix) },
    );
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}

/** How often a replica adds the counts it made in memory to the rows. */
const FLUSH_MS = 50;

interface TallyEntry {
  /** The window's end on the caller's clock, and (frozen) on the wall clock. */
  window: number;
  realEnd: number | undefined;
  /** The row's count as last read (every replica's requests written by then). */
  read: number;
  /** This replica's requests being added to the row, and those since. */
  sending: number;
  unsent: number;
}

/** A batch of counts on its way to the rows. */
interface SentCount {
  key: string;
  window: number;
  realEnd: number | undefined;
  count: number;
  entry: TallyEntry;
}

/**
 * A replica's view of the ceilings it counts without the database: per ceiling key, its current
 * window's count as last read, plus its own requests since. Only a key's current window is kept: the
 * requests of a window that has ended matter to no answer any more.
 */
class Tally {
  private readonly entries = new Map<string, TallyEntry>();
  private sweepAt = 0;

  take(ceilings: readonly Ceiling[], at: RateInstant): CountsTaken {
    this.sweep(at.now);
    const counts: number[] = [];
    const realEnds: (number | undefined)[] = [];
    for (const ceiling of ceilings) {
      const entry = this.current(ceiling, at);
      counts.push(entry.read + entry.sending + entry.unsent);
      realEnds.push(entry.realEnd);
      entry.unsent += 1;
    }
    return { counts, realEnds };
  }

  /**
   * What the database answered a counted request (its limits on): the row's count, this one included,
   * for the keys this tally already follows (those whose limits were off here); others are not kept.
   */
  learn(ceilings: readonly Ceiling[], at: RateInstant, taken: CountsTaken, counted: boolean): void {
    ceilings.forEach((ceiling, i) => {
      if (!this.entries.has(ceiling.key)) return;
      const entry = this.current(ceiling, at);
      entry.read = (taken.counts[i] ?? 0) + (counted ? 1 : 0);
    });
  }

  /** Whether any of these ceilings has requests not yet in the rows. */
  holds(ceilings: readonly Ceiling[]): boolean {
    return ceilings.some((ceiling) => {
      const entry = this.entries.get(ceiling.key);
      return entry !== undefined && entry.sending + entry.unsent > 0;
    });
  }

  /** Takes out the counts to add to the rows. */
  send(): SentCount[] {
    const batch: SentCount[] = [];
    for (const [key, entry] of this.entries) {
      if (entry.unsent === 0) continue;
      batch.push({ key, window: entry.window, realEnd: entry.realEnd, count: entry.unsent, entry });
      entry.sending += entry.unsent;
      entry.unsent = 0;
    }
    return batch;
  }

  /** The rows' counts after the batch went in (null: the row holds a newer window). */
  sent(batch: readonly SentCount[], counts: readonly (number | null)[]): void {
    batch.forEach((sent, i) => {
      sent.entry.sending -= sent.count;
      const count = counts[i];
      if (count !== null && count !== undefined && this.entries.get(sent.key) === sent.entry)
        sent.entry.read = count;
    });
  }

  /** The batch could not be written: its counts wait for the next flush. */
  unsent(batch: readonly SentCount[]): void {
    for (const sent of batch) {
      sent.entry.sending -= sent.count;
      sent.entry.unsent += sent.count;
    }
  }

  forget(prefixes: readonly string[]): void {
    for (const key of this.entries.keys())
      if (prefixes.some((prefix) => key.startsWith(prefix))) this.entries.delete(key);
  }

  /** Drops windows that have ended with nothing left to send, now and then, so idle keys do not pile up. */
  private sweep(now: number): void {
    if (this.entries.size < 10_000 || now < this.sweepAt) return;
    this.sweepAt = now + 60_000;
    for (const [key, entry] of this.entries)
      if (entry.window <= now && entry.sending + entry.unsent === 0) this.entries.delete(key);
  }

  /** The key's entry for the window the request falls in, a fresh one when that window is new here. */
  private current(ceiling: Ceiling, at: RateInstant): TallyEntry {
    const window = windowEndOf(ceiling, at.now);
    const entry = this.entries.get(ceiling.key);
    if (entry && isCurrent(entry, window, at.real)) return entry;
    // A request whose time was read just before a newer request's counts in the newer window, rather
    // than dropping that window's counts not yet written.
    if (entry && entry.window > window && (entry.realEnd === undefined || at.real < entry.realEnd))
      return entry;
    const fresh = {
      window,
      realEnd: at.frozen ? at.real + (window - at.now) : undefined,
      read: 0,
      sending: 0,
      unsent: 0,
    };
    this.entries.set(ceiling.key, fresh);
    return fresh;
  }
}

/** The first string after every string that starts with `prefix`, in byte order. */
function nextPrefix(prefix: string): string {
  const last = prefix.charCodeAt(prefix.length - 1);
  return prefix.slice(0, -1) + String.fromCharCode(last + 1);
}
