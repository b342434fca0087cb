/** The key scopes of the specification. A key carries all of them unless restricted at creation. */
export const SCOPES = [
  'shipments:read',
  'shipments:write',
  'rates:read',
  'orders:read',
  'billing:read',
] as const;
export type Scope = (typeof SCOPES)[number];

export const PLANS = ['starter', 'growth', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];
