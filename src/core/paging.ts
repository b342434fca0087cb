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

/** A place in a newest-first list: the last item of the page before, by time and then creation order. */
export interface PagePosition {
  createdAt: number;
  seq: number;
}

/**
 * A cursor names the last item of the page it came from by its place in the order, not by an
 * offset, so items created between two pages neither shift nor repeat what follows.
 */
export function encodeCursor(position: PagePosition): string {
  return `cur_${Buffer.from(`${position.createdAt}.${position.seq}`).toString('base64url')}`;
}

export function decodeCursor(cursor: string): PagePosition {
  const match = cursor.startsWith('cur_')
    ? /^(\d{1,16})\.(\d{1,16})$/.exec(Buffer.from(cursor.slice(4), 'base64url').toString())
    : null;
  if (!match) {
    throw invalidParameter(
      'cursor',
      "'cursor' is not a cursor this API returned; pass meta.cursor unchanged.",
    );
  }
  return { createdAt: Number(match[1]), seq: Number(match[2]) };
}
