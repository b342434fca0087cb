import type { Context, MiddlewareHandler, Next } from 'hono';
import type { Caller } from '../core/actor.js';
import { ApiError } from '../core/errors.js';
import {
  admits,
  type Ceiling,
  type CountsTaken,
  type RateCounts,
  type RateInstant,
  windowEndOf,
} from '../core/rate-counts.js';
import { addAnswerHeaders } from './answer-headers.js';
import type { AppEnv } from './context.js';

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

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix seconds at which the window of the tightest ceiling ends. */
  reset: number;
}

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
  // Indexed: every request decides here, and an `entries()` loop makes an array a ceiling.
  for (let i = 0; i < ceilings.length; i++) {
    const remaining = Math.max(0, (ceilings[i] as Ceiling).limit - (counts[i] ?? 0) - (allowed ? 1 : 0));
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
 * Counts requests wherever `counts` keeps them, and says what that means for each: at once when they
 * are counted in memory (one sandbox), as every request is.
 */
export class RateLimiter {
  constructor(private readonly counts: RateCounts) {}

  take(
    ceilings: readonly Ceiling[],
    at: RateInstant,
    enforce: boolean,
  ): RateDecision | Promise<RateDecision> {
    const taken = this.counts.take(ceilings, at, enforce);
    return taken instanceof Promise
      ? taken.then((counted) => decide(ceilings, at, enforce, counted))
      : decide(ceilings, at, enforce, taken);
  }
}

/**
 * The contract's rate limiting: every ceiling of the caller's policy, headers on every authenticated
 * answer, 429 with `Retry-After` when a ceiling is full. With limits switched off the headers still
 * count down.
 */
export function rateLimit(
  limiter: RateLimiter,
  policyOf: (caller: Caller) => RateLimitPolicy | Promise<RateLimitPolicy>,
  realNow: () => number,
): MiddlewareHandler<AppEnv> {
  // Not async: on one sandbox the policy and the counts are in memory, and the request is handed on
  // without a promise turn of this step's own; over PostgreSQL the counts are a round trip.
  return (c, next) => {
    const caller = c.get('caller');
    const policy = policyOf(caller);
    if (policy instanceof Promise) return policy.then((read) => count(c, next, caller, read));
    return count(c, next, caller, policy);
  };

  function count(c: Context<AppEnv>, next: Next, caller: Caller, policy: RateLimitPolicy) {
    const result = limiter.take(
      policy.ceilings,
      { now: caller.now, real: realNow(), frozen: policy.frozen },
      policy.enforce,
    );
    if (result instanceof Promise) return result.then((decided) => answer(c, next, policy, decided));
    return answer(c, next, policy, result);
  }
}

const MAX_RETRY_AFTER_S = 366 * 24 * 3600;

/** The decision's headers on the answer and the request handed on, or the 429. */
function answer(c: Context<AppEnv>, next: Next, policy: RateLimitPolicy, result: RateDecision) {
  const limit = String(result.state.limit);
  const remaining = String(result.state.remaining);
  const reset = String(result.state.reset);
  if (result.exceeded) {
    // Retry-After is read in real seconds; a fast clock ends its window sooner than that.
    const speed = policy.frozen ? 1 : policy.clockSpeed;
    // Whole seconds, and at most a year: a clock slowed to a crawl would otherwise ask for longer
    // than a number prints as an integer.
    const retryAfter = Math.min(
      MAX_RETRY_AFTER_S,
      Math.max(1, Math.ceil(result.exceeded.realWait / speed / 1000)),
    );
    throw new ApiError(429, 'rate_limit_exceeded', `Rate limit exceeded: ${result.exceeded.ceiling.name}.`, {
      headers: {
        'X-RateLimit-Limit': limit,
        'X-RateLimit-Remaining': remaining,
        'X-RateLimit-Reset': reset,
        'Retry-After': String(retryAfter),
      },
    });
  }
  addAnswerHeaders(c, {
    'x-ratelimit-limit': limit,
    'x-ratelimit-remaining': remaining,
    'x-ratelimit-reset': reset,
  });
  return next();
}
