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
interface Instant {
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

const windowEndOf = (ceiling: Ceiling, now: number) =>
  (Math.floor(now / ceiling.windowMs) + 1) * ceiling.windowMs;

/**
 * Fixed-window counters on the caller's clock, kept in memory: a request costs a few map lookups,
 * and Node runs one request's check-and-count without interleaving, so concurrent requests never
 * overshoot. Counts start again at zero after a restart. Windows are whole minutes and UTC days of
 * the account's clock, so advancing the clock a minute empties the minute window.
 */
export class RateLimiter {
  /** Per ceiling key: its window (end on the caller's clock), its count, and (frozen) its real end. */
  private readonly counts = new Map<string, { window: number; count: number; realEnd?: number }>();
  private sweepAt = 0;

  /**
   * Counts the request against every ceiling unless one is full (and enforced). Returns the state of
   * the tightest ceiling for the headers, and the full ceiling when the request must be refused.
   */
  take(
    ceilings: readonly Ceiling[],
    at: Instant,
    enforce: boolean,
  ): { allowed: boolean; state: RateLimitState; exceeded?: { ceiling: Ceiling; realWait: number } } {
    const { now } = at;
    const counts = ceilings.map((ceiling) => this.count(ceiling.key, windowEndOf(ceiling, now), at.real));
    const full = ceilings.findIndex((ceiling, i) => (counts[i] ?? 0) >= ceiling.limit);
    const allowed = !enforce || full === -1;
    if (allowed) {
      for (const ceiling of ceilings) this.increment(ceiling.key, windowEndOf(ceiling, now), at);
    }
    let tightest = 0;
    let tightestRemaining = Number.POSITIVE_INFINITY;
    for (const [i, ceiling] of ceilings.entries()) {
      const remaining = Math.max(0, ceiling.limit - (counts[i] ?? 0) - (allowed ? 1 : 0));
      if (remaining < tightestRemaining) {
        tightest = i;
        tightestRemaining = remaining;
      }
    }
    const chosen = ceilings[full === -1 || !enforce ? tightest : full] as Ceiling;
    const windowEnd = windowEndOf(chosen, now);
    this.sweep(now);
    return {
      allowed,
      state: {
        limit: chosen.limit,
        remaining: full === -1 || !enforce ? tightestRemaining : 0,
        reset: Math.ceil(windowEnd / 1000),
      },
      ...(allowed
        ? {}
        : { exceeded: { ceiling: chosen, realWait: this.realWait(chosen.key, windowEnd, at) } }),
    };
  }

  /** Real milliseconds until the window of `key` ends (a frozen clock's windows end only in real time). */
  private realWait(key: string, windowEnd: number, at: Instant): number {
    const realEnd = this.counts.get(key)?.realEnd;
    return at.frozen && realEnd !== undefined ? realEnd - at.real : windowEnd - at.now;
  }

  /** Forgets the counts whose keys start with one of `prefixes` (an account's reset). */
  forget(prefixes: readonly string[]): void {
    for (const key of this.counts.keys()) {
      if (prefixes.some((prefix) => key.startsWith(prefix))) this.counts.delete(key);
    }
  }

  private count(key: string, windowEnd: number, real: number): number {
    const entry = this.counts.get(key);
    if (!entry || entry.window !== windowEnd) return 0;
    return entry.realEnd !== undefined && real >= entry.realEnd ? 0 : entry.count;
  }

  private increment(key: string, windowEnd: number, at: Instant): void {
    const entry = this.counts.get(key);
    if (entry && this.count(key, windowEnd, at.real) > 0) entry.count += 1;
    else {
      const realEnd = at.frozen ? at.real + (windowEnd - at.now) : undefined;
      this.counts.set(key, { window: windowEnd, count: 1, ...(realEnd === undefined ? {} : { realEnd }) });
    }
  }

  /** Drops windows that have ended, now and then, so idle keys do not pile up. */
  private sweep(now: number): void {
    if (this.counts.size < 10_000 || now < this.sweepAt) return;
    this.sweepAt = now + 60_000;
    for (const [key, entry] of this.counts) if (entry.window <= now) this.counts.delete(key);
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
    const result = limiter.take(
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
