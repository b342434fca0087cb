/** The specification's plans. An account is on one; its plan sets its request ceilings. */
export const PLANS = ['starter', 'growth', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];
