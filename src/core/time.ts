/**
 * The last instant the contract's timestamps can write (`YYYY` has four digits): no account clock
 * passes it, and an instant reckoned past it (a refund due 14 days after it) is written as it.
 */
export const END_OF_TIME = Date.UTC(9999, 11, 31, 23, 59, 59);

/**
 * The one formatter of timestamps. The contract allows exactly `YYYY-MM-DDThh:mm:ssZ`: UTC, whole
 * seconds, no milliseconds, no offset. Internally every instant is a number of milliseconds since the
 * Unix epoch on an account's virtual clock.
 */
export function formatTimestamp(ms: number): string {
  return `${new Date(Math.floor(Math.min(ms, END_OF_TIME) / 1000) * 1000).toISOString().slice(0, 19)}Z`;
}

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
