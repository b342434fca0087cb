import { ApiError } from './errors.js';

/**
 * What one account may hold at once: a tenant of a shared sandbox cannot grow the server's memory,
 * its lists or an event's fan-out without bound. One more is `422 limit_reached`, whose message names
 * the limit and the way out. Rows made before the caps stay (nothing is deleted); such an account is
 * refused new ones until it is back under the cap.
 */
export const ACCOUNT_CAPS = {
  webhooks: { max: 100, what: 'webhooks', wayOut: 'delete one first' },
  faultRules: { max: 100, what: 'fault rules in play', wayOut: 'delete one first' },
  activeKeys: { max: 100, what: 'active keys', wayOut: 'revoke one first' },
  // Each open session takes a copy of every event the account raises.
  listenSessions: {
    max: 20,
    what: 'open listen sessions',
    wayOut: 'stop the command of one first (its session ends 10 seconds after it disconnects)',
  },
  // Counted by each server (replica): each stream holds what its client has not read yet.
  requestStreams: {
    max: 20,
    what: 'request streams open on a server',
    wayOut: 'close one first (a `logs tail`, say)',
  },
} as const satisfies Record<string, AccountCap>;

export interface AccountCap {
  max: number;
  /** What is counted, in the plural: "webhooks". */
  what: string;
  /** What the caller can do about it. */
  wayOut: string;
}

/** Refuses one more when the account already holds `held` (counted inside the creating transaction). */
export function ensureUnderCap(held: number, cap: AccountCap): void {
  if (held < cap.max) return;
  throw new ApiError(
    422,
    'limit_reached',
    `An account has at most ${cap.max} ${cap.what}; ${cap.wayOut}. This one has ${held}.`,
  );
}
