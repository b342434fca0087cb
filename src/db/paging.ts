import type { PagePosition } from '../core/paging.js';

/**
 * The SQL of a newest-first list that pages by cursor (core/paging.ts): rows by time, then by creation
 * order among those of the same instant (`seq`: a row's sequence number, or SQLite's rowid where the
 * table has none of its own).
 */
export const newestFirst = (seq = 'seq') => `ORDER BY created_at DESC, ${seq} DESC`;

/** The rows after a cursor's place in that order, with `afterParams` bound. */
export const afterPlace = (seq = 'seq') =>
  `(created_at < @afterCreatedAt OR (created_at = @afterCreatedAt AND ${seq} < @afterSeq))`;

export const afterParams = (after: PagePosition | undefined) => ({
  afterCreatedAt: after?.createdAt,
  afterSeq: after?.seq,
});
