import { DAY, MINUTE } from '../core/time.js';

/** The specification's plans. An account is on one; its plan sets its request ceilings. */
export const PLANS = ['starter', 'growth', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

/** The specification's ceilings; enterprise has no plan ceiling, only the per-key one. */
export const PLAN_LIMITS: Readonly<Record<Plan, { perMinute: number; perDay: number } | null>> = {
  starter: { perMinute: 60, perDay: 5_000 },
  growth: { perMinute: 300, perDay: 50_000 },
  enterprise: null,
};
export const PER_KEY_PER_MINUTE = 120;

/** A ceiling as the HTTP layer's rate limiter counts it (a fixed window of `windowMs`). */
export interface PlanCeiling {
  key: string;
  limit: number;
  windowMs: number;
  name: string;
}

/**
 * `1,000` as en-US writes it. `toLocaleString` would say the same through ICU, whose number data and
 * code, first touched by the first request, kept 6.8 MiB more of node's binary resident.
 */
const count = (n: number) => String(n).replace(/\B(?=(\d{3})+$)/g, ',');

/** Where each account's and each key's counts are kept: a reset forgets them by these prefixes. */
export const accountCountPrefix = (accountId: string) => `a:${accountId}:`;
export const keyCountPrefix = (keyId: string) => `k:${keyId}:`;

/**
 * The two ceilings of the specification, kept apart as it says: 120 a minute for the key, and the
 * plan's per minute and per UTC day for the account.
 */
export function ceilingsFor(account: { id: string; plan: Plan }, keyId: string): PlanCeiling[] {
  const ceilings: PlanCeiling[] = [
    {
      key: `${keyCountPrefix(keyId)}m`,
      limit: PER_KEY_PER_MINUTE,
      windowMs: MINUTE,
      name: `the per-key limit of ${count(PER_KEY_PER_MINUTE)} requests a minute`,
    },
  ];
  const plan = PLAN_LIMITS[account.plan];
  if (plan) {
    ceilings.push(
      {
        key: `${accountCountPrefix(account.id)}m`,
        limit: plan.perMinute,
        windowMs: MINUTE,
        name: `the ${account.plan} plan's limit of ${count(plan.perMinute)} requests a minute`,
      },
      {
        key: `${accountCountPrefix(account.id)}d`,
        limit: plan.perDay,
        windowMs: DAY,
        name: `the ${account.plan} plan's limit of ${count(plan.perDay)} requests a day`,
      },
    );
  }
  return ceilings;
}
