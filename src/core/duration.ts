import ms from 'ms';

/**
 * Milliseconds of a duration as users write them: a number of seconds (`90`, `"90"`) or a string
 * the `ms` package reads (`"90s"`, `"5m"`, `"1.5h"`, `"3d"`, `"2 days"`). Undefined when unreadable.
 */
export function durationMillis(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value * 1000 : undefined;
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const text = value.trim();
  // `ms` reads a bare number as milliseconds; ours are seconds.
  const millis = /^-?\d+(\.\d+)?$/.test(text) ? Number(text) * 1000 : ms(text as ms.StringValue);
  return Number.isFinite(millis) ? millis : undefined;
}

/** How a duration is written: the words every flag, argument and message that takes one uses. */
export const DURATION_FORMAT =
  'a number of seconds, or a number with ms, s, m, h or d (500ms, 90s, 5m, 2h, 3d)';

/** A length of time as the duration rule writes it: `1m`, `500ms`, `30d`. */
export const formatDuration = (millis: number): string => ms(millis);

const SECOND_MS = 1000;
const MAX_RETRY_DELAY_MS = 30 * 24 * 60 * 60 * SECOND_MS;
/** At most this many retries after a failed webhook delivery (the contract's bound). */
export const MAX_RETRIES = 20;

/**
 * A webhook retry delay as the contract bounds it: a whole number of seconds, from 1 second to 30
 * days. Milliseconds, or undefined for anything else (a fraction, `1e300`, `"99999999d"`).
 */
export function retryDelayMillis(value: unknown): number | undefined {
  const millis = durationMillis(value);
  if (millis === undefined || millis < SECOND_MS || millis > MAX_RETRY_DELAY_MS) return undefined;
  return Number.isInteger(millis / SECOND_MS) ? millis : undefined;
}

export const RETRY_DELAY_RULE =
  'a whole number of seconds from 1 second to 30 days, such as 90, "5m" or "2h"';
