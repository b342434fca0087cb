import type { MiddlewareHandler } from 'hono';
import type { Plan } from '../accounts/plans.js';
import { ApiError } from '../core/errors.js';
import { DAY, MINUTE } from '../core/time.js';
import type { AppEnv } from './context.js';
import { presetHeaders } from './preset-headers.js';

/** The specification's ceilings; enterprise has no plan ceiling, only the per-key one. */
export const PLAN_LIMITS: Readonly<Record<Plan, { perMinute: number; perDay: number } | null>> = {
  starter: { perMinute: 60, perDay: 5_000 },
  growth: { perMinute: 300, perDay: 50_000 },
  enterprise: null,
};
export const PER_KEY_PER_MINUTE = 120;

interface Ceiling {
  /** Which ceiling, for the 429's message (worded only then). */
  kind: 'key per minute' | 'plan per minute' | 'plan per day';
  key: string;
  limit: number;
  windowEnd: number;
}

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix seconds at which the window of the tightest ceiling ends. */
  reset: number;
}

/**
 * Fixed-window counters on the account's clock, kept in memory: a request costs a few map lookups,
 * and Node runs one request's check-and-count without interleaving, so concurrent requests never
 * overshoot. Counts start again at zero after a restart. Windows are whole minutes and UTC days of
 * the account's clock, so advancing the clock a minute empties the minute window.
 */
export class RateLimiter {
  private readonly counts = new Map<string, { window: number; count: number }>();
  private sweepAt = 0;

  /**
   * Counts the request against every ceiling unless one is full. Returns the state of the tightest
   * ceiling for the headers, and whether the request may go on.
   */
  take(
    account: { id: string; plan: Plan },
    keyId: string,
    now: number,
    enforce: boolean,
  ): { allowed: boolean; state: RateLimitState; exceeded?: Ceiling } {
    const ceilings = this.ceilings(account, keyId, now);
    const counts = ceilings.map((ceiling) => this.count(ceiling.key, ceiling.windowEnd));
    const full = ceilings.findIndex((ceiling, i) => (counts[i] ?? 0) >= ceiling.limit);
    const allowed = !enforce || full === -1;
    if (allowed) {
      for (const ceiling of ceilings) this.increment(ceiling.key, ceiling.windowEnd);
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
    this.sweep(now);
    return {
      allowed,
      state: {
        limit: chosen.limit,
        remaining: full === -1 || !enforce ? tightestRemaining : 0,
        reset: Math.ceil(chosen.windowEnd / 1000),
      },
      ...(allowed ? {} : { exceeded: chosen }),
    };
  }

  /** Forgets an account's counts (a reset). */
  forgetAccount(accountId: string, keyIds: string[]): void {
    for (const key of this.counts.keys()) {
      if (key.startsWith(`a:${accountId}:`) || keyIds.some((id) => key.startsWith(`k:${id}:`)))
        this.counts.delete(key);
    }
  }

  private ceilings(account: { id: string; plan: Plan }, keyId: string, now: number): Ceiling[] {
    const minuteEnd = (Math.floor(now / MINUTE) + 1) * MINUTE;
    const dayEnd = (Math.floor(now / DAY) + 1) * DAY;
    const ceilings: Ceiling[] = [
      { kind: 'key per minute', key: `k:${keyId}:m`, limit: PER_KEY_PER_MINUTE, windowEnd: minuteEnd },
    ];
    const plan = PLAN_LIMITS[account.plan];
    if (plan) {
      ceilings.push(
        { kind: 'plan per minute', key: `a:${account.id}:m`, limit: plan.perMinute, windowEnd: minuteEnd },
        { kind: 'plan per day', key: `a:${account.id}:d`, limit: plan.perDay, windowEnd: dayEnd },
      );
    }
    return ceilings;
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
    this.sweepAt = now + MINUTE;
    for (const [key, entry] of this.counts) if (entry.window <= now) this.counts.delete(key);
  }
}

function ceilingName(ceiling: Ceiling, plan: Plan): string {
  const limit = ceiling.limit.toLocaleString('en-US');
  switch (ceiling.kind) {
    case 'key per minute':
      return `the per-key limit of ${limit} requests a minute`;
    case 'plan per minute':
      return `the ${plan} plan's limit of ${limit} requests a minute`;
    case 'plan per day':
      return `the ${plan} plan's limit of ${limit} requests a day`;
  }
}

/**
 * The contract's rate limiting: two ceilings per request (the plan's, per minute and per UTC day,
 * and 120 a minute per key), headers on every authenticated answer, 429 with `Retry-After` when a
 * ceiling is full. With limits switched off (per account or for the server) the headers still count.
 */
export function rateLimit(limiter: RateLimiter, serverEnforces: boolean): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const { account, keyId, now } = c.get('auth');
    const result = limiter.take(account, keyId, now, serverEnforces && account.rateLimitsEnabled);
    const headers = {
      'X-RateLimit-Limit': String(result.state.limit),
      'X-RateLimit-Remaining': String(result.state.remaining),
      'X-RateLimit-Reset': String(result.state.reset),
    };
    if (!result.allowed && result.exceeded) {
      // Retry-After is read in real seconds; a fast clock ends its window sooner than that.
      const virtualWait = result.exceeded.windowEnd - now;
      const speed = account.clock.frozen ? 1 : account.clock.speed;
      const retryAfter = Math.max(1, Math.ceil(virtualWait / speed / 1000));
      const which = ceilingName(result.exceeded, account.plan);
      throw new ApiError(429, 'rate_limit_exceeded', `Rate limit exceeded: ${which}.`, {
        headers: { ...headers, 'Retry-After': String(retryAfter) },
      });
    }
    presetHeaders(c, headers);
    await next();
  };
}
