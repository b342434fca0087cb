/** The key scopes of the specification. A key carries all of them unless restricted at creation. */
export const SCOPES = [
  'shipments:read',
  'shipments:write',
  'rates:read',
  'orders:read',
  'billing:read',
] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * Who is acting and when: the account, the key it called with and that key's scopes, and the
 * instant the account's clock read once for this request (a scheduled job acts at its due time).
 */
export interface Actor {
  accountId: string;
  now: number;
}

/** An actor that called with an API key. */
export interface Caller extends Actor {
  keyId: string;
  scopes: readonly Scope[];
}

/** A full key carries every scope: what the sandbox's own settings, keys, faults and reset need. */
export const isFullKey = (caller: Pick<Caller, 'scopes'>): boolean =>
  SCOPES.every((scope) => caller.scopes.includes(scope));
