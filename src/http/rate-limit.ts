import type { MiddlewareHandler } from 'hono';
import type { Caller } from '../core/actor.js';
import { ApiError } from '../core/errors.js';
import type { AppEnv } from './context.js';

/** One ceiling a request counts against: a fixed window, aligned to multiples of `windowMs` (minutes, UTC days). */
export interface Ceiling {
  /** Where its count is kept; ceilings of one account share a prefix, so a reset can find them. */
  key: string;
  limit: number;
  windowMs: number;
  /** How the 429's message names it: "the per-key limit of 120 requests a minute". */
  name: string;
}

/** What limits a caller: its ceilings, whether they are enforced, and how its clock runs. */
export interface RateLimitPolicy {
  ceilings: readonly Ceiling[];
  enforce: boolean;
  /** Virtual milliseconds a real one. */
  clockSpeed: number;
  /**
   * A frozen clock's windows would never end, so `Retry-After` would never come true: each of its
   * windows also ends once the real time it had left when it opened has passed. Moving the clock
   * still ends it too.
   */
  frozen: boolean;
}

/** When a request is counted: on the caller's clock, and on the wall clock. */
export interface RateInstant {
  now: number;
  real: number;
  frozen: boolean;
}

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix seconds at which the window of the tightest ceiling ends. */
  reset: number;
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

export interface RateDecision {
  allowed: boolean;
  state: RateLimitState;
  exceeded?: { ceiling: Ceiling; realWait: number };
}

/**
 * What the counts mean for the request: allowed or not, the state of the tightest ceiling for the
 * headers, and the full ceiling (with the real time until its window ends) when it must be refused.
 */
export function decide(
  ceilings: readonly Ceiling[],
  at: RateInstant,
  enforce: boolean,
  { counts, realEnds }: CountsTaken,
): RateDecision {
  const full = ceilings.findIndex((ceiling, i) => (counts[i] ?? 0) >= ceiling.limit);
  const allowed = admits(ceilings, counts, enforce);
  let tightest = 0;
  let tightestRemaining = Number.POSITIVE_INFINITY;
  for (const [i, ceiling] of ceilings.entries()) {
    const remaining = Math.max(0, ceiling.limit - (counts[i] ?? 0) - (allowed ? 1 : 0));
    if (remaining < tightestRemaining) {
      tightest = i;
      tightestRemaining = remaining;
    }
  }
  const chosenAt = allowed ? tightest : full;
  const chosen = ceilings[chosenAt] as Ceiling;
  const windowEnd = windowEndOf(chosen, at.now);
  const state = {
    limit: chosen.limit,
    remaining: allowed ? tightestRemaining : 0,
    reset: Math.ceil(windowEnd / 1000),
  };
  if (allowed) return { allowed, state };
  // A frozen clock's windows end only in real time.
  const realEnd = realEnds[chosenAt];
  const realWait = at.frozen && realEnd !== undefined ? realEnd - at.real : windowEnd - at.now;
  return { allowed, state, exceeded: { ceiling: chosen, realWait } };
}

/**
 * Fixed-window counters on the caller's clock, kept in memory: a request costs a few map lookups,
 * and Node runs one request's check-and-count without interleaving, so concurrent requests never
 * overshoot. Counts start again at zero after a restart. Windows are whole minutes and UTC days of
 * the account's clock, so advancing the clock a minute empties the minute window.
 */
export class MemoryRateCounts implements RateCounts {
  /** Per ceiling key: its window (end on the caller's clock), its count, and (frozen) its real end. */
  private readonly windows = new Map<string, { window: number; count: number; realEnd?: number }>();
  private sweepAt = 0;

  take(ceilings: readonly Ceiling[], at: RateInstant, enforce: boolean): CountsTaken {
    const counts = ceilings.map((ceiling) => this.count(ceiling.key, windowEndOf(ceiling, at.now), at.real));
    if (admits(ceilings, counts, enforce)) {
      for (const ceiling of ceilings) this.increment(ceiling.key, windowEndOf(ceiling, at.now), at);
    }
    const realEnds = ceilings.map((ceiling) => this.windows.get(ceiling.key)?.realEnd);
    this.sweep(at.now);
    return { counts, realEnds };
  }

  /** Forgets the counts whose keys start with one of `prefixes` (an account's reset). */
  forget(prefixes: readonly string[]): void {
    for (const key of this.windows.keys()) {
      if (prefixes.some((prefix) => key.startsWith(prefix))) this.windows.delete(key);
    }
  }

  private count(key: string, windowEnd: number, real: number): number {
    const entry = this.windows.get(key);
    if (!entry || entry.window !== windowEnd) return 0;
    return entry.realEnd !== undefined && real >= entry.realEnd ? 0 : entry.count;
  }

  private increment(key: string, windowEnd: number, at: RateInstant): void {
    const entry = this.windows.get(key);
    if (entry && this.count(key, windowEnd, at.real) > 0) entry.count += 1;
    else {
      const realEnd = at.frozen ? at.real + (windowEnd - at.now) : undefined;
      this.windows.set(key, { window: windowEnd, count: 1, ...(realEnd === undefined ? {} : { realEnd }) });
    }
  }

  /** Drops windows that have ended, now and then, so idle keys do not pile up. */
  private sweep(now: number): void {
    if (this.windows.size < 10_000 || now < this.sweepAt) return;
    this.sweepAt = now + 60_000;
    for (const [key, entry] of this.windows) if (entry.window <= now) this.windows.delete(key);
  }
}

/** Counts requests wherever `counts` keeps them, and says what that means for each. */
export class RateLimiter {
  constructor(private readonly counts: RateCounts) {}

  async take(ceilings: readonly Ceiling[], at: RateInstant, enforce: boolean): Promise<RateDecision> {
    return decide(ceilings, at, enforce, await this.counts.take(ceilings, at, enforce));
  }
}

/**
 * The contract's rate limiting: every ceiling of the caller's policy, headers on every authenticated
 * answer, 429 with `Retry-After` when a ceiling is full. With limits switched off the headers still
 * count down.
 */
export function rateLimit(
  limiter: RateLimiter,
  policyOf: (caller: Caller) => Promise<RateLimitPolicy>,
  realNow: () => number,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const caller = c.get('caller');
    const policy = await policyOf(caller);
    const result = await limiter.take(
      policy.ceilings,
      { now: caller.now, real: realNow(), frozen: policy.frozen },
      policy.enforce,
    );
    const headers = {
      'X-RateLimit-Limit': String(result.state.limit),
      'X-RateLimit-Remaining': String(result.state.remaining),
      'X-RateLimit-Reset': String(result.state.reset),
    };
    if (result.exceeded) {
      // Retry-After is read in real seconds; a fast clock ends its window sooner than that.
      const speed = policy.frozen ? 1 : policy.clockSpeed;
      const retryAfter = Math.max(1, Math.ceil(result.exceeded.realWait / speed / 1000));
      throw new ApiError(
        429,
        'rate_limit_exceeded',
        `Rate limit exceeded: ${result.exceeded.ceiling.name}.`,
        {
          headers: { ...headers, 'Retry-After': String(retryAfter) },
        },
      );
    }
    for (const [name, value] of Object.entries(headers)) c.header(name, value);
    await next();
  };
}
