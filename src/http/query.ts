import { invalidParameter } from './errors.js';

/** `limit` as the contract reads it: a whole number from 1 to `max`, or the default when absent. */
export function parseLimit(raw: string | undefined, bounds: { default: number; max: number }): number {
  if (raw === undefined) return bounds.default;
  const limit = /^\d{1,6}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(limit >= 1 && limit <= bounds.max)) {
    throw invalidParameter('limit', `'limit' must be a whole number from 1 to ${bounds.max}; got '${raw}'.`);
  }
  return limit;
}
