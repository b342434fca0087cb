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
