/** How the dashboard writes times, durations, statuses and money. */

/** `2026-11-22T08:23:14Z` as `2026-11-22 08:23:14 UTC`: the API's instant, easier to read. */
export function formatInstant(timestamp: string | null | undefined): string {
  if (!timestamp) return '—';
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})Z$/.exec(timestamp);
  return match ? `${match[1]} ${match[2]} UTC` : timestamp;
}

/** A span of milliseconds as a person says it: `45 s`, `5 min`, `2 h 30 min`, `3 d 4 h`. */
export function formatSpan(ms: number): string {
  const seconds = Math.round(Math.abs(ms) / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`;
  const days = Math.floor(hours / 24);
  return hours % 24 === 0 ? `${days} d` : `${days} d ${hours % 24} h`;
}

/**
 * How far `timestamp` is from `now`, both on the account's clock: `in 5 min`, `2 h ago`, `now`.
 * Empty when either is unknown.
 */
export function relativeTo(timestamp: string | null | undefined, now: string | undefined): string {
  if (!timestamp || !now) return '';
  const difference = Date.parse(timestamp) - Date.parse(now);
  if (Number.isNaN(difference)) return '';
  if (Math.abs(difference) < 1000) return 'now';
  return difference > 0 ? `in ${formatSpan(difference)}` : `${formatSpan(difference)} ago`;
}

/** `out_for_delivery` as `out for delivery`. */
export function statusWords(status: string): string {
  return status.replaceAll('_', ' ');
}

/**
 * What an advance box sends: a bare number as a number of seconds, anything else as the text the
 * API reads (`90s`, `5m`, `2h`, `3d`, `2 days`), which judges it; nothing for an empty box.
 */
export function durationValue(text: string): number | string | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  return /^\d+(\.\d+)?$/.test(trimmed) ? Number(trimmed) : trimmed;
}

/** `{ amount: "12.40", currency: "USD" }` as `12.40 USD`. */
export function formatMoney(money: { amount: string; currency: string } | undefined): string {
  return money ? `${money.amount} ${money.currency}` : '—';
}

/** A body for people: JSON pretty-printed when it is JSON, as it is otherwise. */
export function prettyBody(body: string | null | undefined): string {
  if (!body) return '';
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/** A one-line address: `San Francisco, CA 94104, US`. */
export function formatPlace(address: {
  city?: string;
  state?: string;
  zip?: string;
  country?: string;
}): string {
  const region = [address.state, address.zip].filter(Boolean).join(' ');
  return [address.city, region, address.country].filter(Boolean).join(', ');
}
