import type { MiddlewareHandler } from 'hono';
import type { Caller } from '../core/actor.js';
import { ApiError } from '../core/errors.js';
import type { AppEnv } from './context.js';
import { presetHeaders } from './node-adapter.js';

/** One ceiling a request counts against: a fixed window, aligned to multiples of `windowMs` (minutes, UTC days). */
export interface Ceiling {
  /** Where its count is kept; ceilings of one account share a prefix, so a reset can find them. */
  key: string;
  limit: number;
  windowMs: number;
  /** How the 429's message names it: "the per-key limit of 120 requests a minute". */
  name: string;
}

/** What limits a caller: its ceilings, whether they are enforced, and how fast its clock runs. */
export interface RateLimitPolicy {
  ceilings: readonly Ceiling[];
  enforce: boolean;
  /** Virtual milliseconds a real one; 1 for a frozen clock, whose windows end in real time. */
  clockSpeed: number;
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
  private readonly counts = new Map<string, { window: number; count: number }>();
  private sweepAt = 0;

  /**
   * Counts the request against every ceiling unless one is full (and enforced). Returns the state of
   * the tightest ceiling for the headers, and the full ceiling when the request must be refused.
   */
  take(
    ceilings: readonly Ceiling[],
    now: number,
    enforce: boolean,
  ): { allowed: boolean; state: RateLimitState; exceeded?: { ceiling: Ceiling; windowEnd: number } } {
    const counts = ceilings.map((ceiling) => this.count(ceiling.key, windowEndOf(ceiling, now)));
    const full = ceilings.findIndex((ceiling, i) => (counts[i] ?? 0) >= ceiling.limit);
    const allowed = !enforce || full === -1;
    if (allowed) {
      for (const ceiling of ceilings) this.increment(ceiling.key, windowEndOf(ceiling, now));
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
      ...(allowed ? {} : { exceeded: { ceiling: chosen, windowEnd } }),
    };
  }

  /** Forgets the counts whose keys start with one of `prefixes` (an account's reset). */
  forget(prefixes: readonly string[]): void {
    for (const key of this.counts.keys()) {
      if (prefixes.some((prefix) => key.startsWith(prefix))) this.counts.delete(key);
    }
  }

  private count(key: string, windowEnd: number): number {
    const entry = this.counts.get(key);
    return entry && entry.window === windowEnd ? entry.count : 0;
  }

  private increment(key: string, windowEnd: number): void {
    const entry = this.counts.get(key);
    if (entry && entry.window === windowEnd) entry.count += 1;
    else this.counts.set(key, { window: windowEnd, count: 1 });
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
  policyOf: (caller: Caller) => RateLimitPolicy,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const caller = c.get('caller');
    const policy = policyOf(caller);
    const result = limiter.take(policy.ceilings, caller.now, policy.enforce);
    const headers = {
      'X-RateLimit-Limit': String(result.state.limit),
      'X-RateLimit-Remaining': String(result.state.remaining),
      'X-RateLimit-Reset': String(result.state.reset),
    };
    if (result.exceeded) {
      // Retry-After is read in real seconds; a fast clock ends its window sooner than that.
      const virtualWait = result.exceeded.windowEnd - caller.now;
      const retryAfter = Math.max(1, Math.ceil(virtualWait / policy.clockSpeed / 1000));
      throw new ApiError(
        429,
        'rate_limit_exceeded',
        `Rate limit exceeded: ${result.exceeded.ceiling.name}.`,
        {
          headers: { ...headers, 'Retry-After': String(retryAfter) },
        },
      );
    }
    presetHeaders(c, headers);
    await next();
  };
}
