/**
 * The rate limits' counting, whichever engine keeps the counts: the ceilings a request counts
 * against, and the counts in memory of a single sandbox (accounts/rate-windows.ts keeps them in the
 * database for replicas). The HTTP layer decides and answers from what is counted (http/rate-limit.ts).
 */

/** One ceiling a request counts against: a fixed window, aligned to multiples of `windowMs` (minutes, UTC days). */
export interface Ceiling {
  /** Where its count is kept; ceilings of one account share a prefix, so a reset can find them. */
  key: string;
  limit: number;
  windowMs: number;
  /** How the 429's message names it: "the per-key limit of 120 requests a minute". */
  name: string;
}

/** When a request is counted: on the caller's clock, and on the wall clock. */
export interface RateInstant {
  now: number;
  real: number;
  frozen: boolean;
}

/** What counting a request found, ceiling by ceiling (in the order given). */
export interface CountsTaken {
  /** Requests already in each ceiling's current window, before this one. */
  counts: readonly number[];
  /** Each window's end on the wall clock, when its clock is frozen (after this request was counted). */
  realEnds: readonly (number | undefined)[];
}

/**
 * Where the counts live: this process's memory (one sandbox) or the database (replicas). `take` checks
 * every ceiling and counts the request against all of them only if none is full (when enforced, see
 * `admits`), as one step that no other request can interleave with.
 */
export interface RateCounts {
  take(ceilings: readonly Ceiling[], at: RateInstant, enforce: boolean): CountsTaken | Promise<CountsTaken>;
}

export const windowEndOf = (ceiling: Ceiling, now: number) =>
  (Math.floor(now / ceiling.windowMs) + 1) * ceiling.windowMs;

/** Whether a request is counted: limits off, or no ceiling full. Every `RateCounts` decides by this. */
export const admits = (ceilings: readonly Ceiling[], counts: readonly number[], enforce: boolean) =>
  !enforce || ceilings.every((ceiling, i) => (counts[i] ?? 0) < ceiling.limit);

/**
 * Fixed-window counters on the caller's clock, kept in memory: a request costs a few map lookups,
 * and Node runs one request's check-and-count without interleaving, so concurrent requests never
 * overshoot. Counts start again at zero after a restart. Windows are whole minutes and UTC days of
 * the account's clock, so advancing the clock a minute empties the minute window.
 */
export class MemoryRateCounts implements RateCounts {
  /** Per ceiling key: its window (end on the caller's clock), its count, and (frozen) its real end. */
  private readonly windows = new Map<string, CountWindow>();
  private sweepAt = 0;

  /**
   * Each ceiling's window looked up once to count and once more to count the request in (every
   * request comes here: the lookups and the arrays are the whole of its cost). A ceiling's key is its
   * own (ceilings of one request never share one).
   */
  take(ceilings: readonly Ceiling[], at: RateInstant, enforce: boolean): CountsTaken {
    const counts: number[] = [];
    const realEnds: (number | undefined)[] = [];
    for (const ceiling of ceilings) {
      const entry = this.windows.get(ceiling.key);
      counts.push(countIn(entry, windowEndOf(ceiling, at.now), at.real));
      realEnds.push(entry?.realEnd);
    }
    if (admits(ceilings, counts, enforce)) {
      for (let i = 0; i < ceilings.length; i++) {
        const ceiling = ceilings[i] as Ceiling;
        realEnds[i] = this.increment(ceiling.key, windowEndOf(ceiling, at.now), at).realEnd;
      }
    }
    this.sweep(at.now);
    return { counts, realEnds };
  }

  /** Forgets the counts whose keys start with one of `prefixes` (an account's reset). */
  forget(prefixes: readonly string[]): void {
    for (const key of this.windows.keys()) {
      if (prefixes.some((prefix) => key.startsWith(prefix))) this.windows.delete(key);
    }
  }

  /** Counts the request in the key's window, a new one if it has ended; answers the window. */
  private increment(key: string, windowEnd: number, at: RateInstant): CountWindow {
    const entry = this.windows.get(key);
    if (entry && countIn(entry, windowEnd, at.real) > 0) {
      entry.count += 1;
      return entry;
    }
    const realEnd = at.frozen ? at.real + (windowEnd - at.now) : undefined;
    const fresh = { window: windowEnd, count: 1, ...(realEnd === undefined ? {} : { realEnd }) };
    this.windows.set(key, fresh);
    return fresh;
  }

  /** Drops windows that have ended, now and then, so idle keys do not pile up. */
  private sweep(now: number): void {
    if (this.windows.size < 10_000 || now < this.sweepAt) return;
    this.sweepAt = now + 60_000;
    for (const [key, entry] of this.windows) if (entry.window <= now) this.windows.delete(key);
  }
}

interface CountWindow {
  window: number;
  count: number;
  realEnd?: number;
}

/** The requests in `entry` if it is the window ending at `windowEnd` and (frozen) has not ended in real time. */
function countIn(entry: CountWindow | undefined, windowEnd: number, real: number): number {
  return entry && isCurrent(entry, windowEnd, real) ? entry.count : 0;
}

/** Whether a window kept is the one ending at `windowEnd` and (frozen) has not ended in real time. */
export const isCurrent = (
  entry: { window: number; realEnd?: number | undefined },
  windowEnd: number,
  real: number,
) => entry.window === windowEnd && (entry.realEnd === undefined || real < entry.realEnd);
