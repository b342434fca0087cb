import { createHmac, timingSafeEqual } from 'node:crypto';
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

/** The contract's page of `GET /v1/shipments`, which every paged list of the sandbox follows. */
export const LIST_PAGE_SIZE = { default: 20, max: 100 } as const;

/** What a paged list is asked: `limit` and `cursor`, as the query gave them. */
export interface PageQuery {
  limit?: string | undefined;
  cursor?: string | undefined;
}

/** A page's `meta`, as the contract gives it. */
export interface PageMeta {
  total: number;
  cursor: string | null;
  has_more: boolean;
}

/** A page of rows read one past its limit (that one says whether more follow; it is not shown). */
export interface Page<Row> {
  rows: Row[];
  hasMore: boolean;
  /** The place of the page's last row, which the next page's cursor names. */
  last: PagePosition | undefined;
}

/** Cuts `rows`, read with `LIMIT limit + 1`, to the page: its rows, whether more follow, its last place. */
export function pageOf<Row>(rows: Row[], limit: number, placeOf: (row: Row) => PagePosition): Page<Row> {
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return { rows: shown, hasMore: rows.length > limit, last: last && placeOf(last) };
}

/** The `meta` of a page: its cursor names the page's last place while more follow, else null. */
export function pageMeta(
  cursors: CursorCodec,
  accountId: string,
  page: Omit<Page<unknown>, 'rows'>,
  total: number,
): PageMeta {
  return {
    total,
    cursor: page.hasMore && page.last ? cursors.encode(accountId, page.last) : null,
    has_more: page.hasMore,
  };
}

/**
 * Cursors: a cursor names the last item of the page it came from by its place in the order, not by
 * an offset, so items created between two pages neither shift nor repeat what follows. It is signed
 * over that place and the account (HMAC-SHA256, cut to 128 bits), so an altered or made-up cursor is
 * refused rather than quietly read as some other place, and one account's cursor means nothing to
 * another. The secret is kept with the data, so cursors outlive a restart of a file database.
 */
export class CursorCodec {
  /**
   * The cursors handed out lately, both ways: a page read again gets its cursor, and a client paging
   * on hands back a cursor known to be ours, without the MAC being worked out again (20 µs of a list,
   * measured in the running server). The oldest make way.
   */
  private readonly issued = new Map<string, string>();
  private readonly places = new Map<string, { accountId: string; position: PagePosition }>();

  constructor(private readonly secret: Buffer) {}

  encode(accountId: string, position: PagePosition): string {
    const key = `${accountId} ${position.createdAt} ${position.seq}`;
    const known = this.issued.get(key);
    if (known !== undefined) return known;
    const place = Buffer.alloc(PLACE_BYTES);
    place.writeBigInt64BE(BigInt(position.createdAt), 0);
    place.writeBigInt64BE(BigInt(position.seq), 8);
    const cursor = `cur_${Buffer.concat([place, this.mac(accountId, place)]).toString('base64url')}`;
    if (this.issued.size >= CURSORS_KEPT) {
      const [oldestKey, oldest] = this.issued.entries().next().value as [string, string];
      this.issued.delete(oldestKey);
      this.places.delete(oldest);
    }
    this.issued.set(key, cursor);
    this.places.set(cursor, { accountId, position: { createdAt: position.createdAt, seq: position.seq } });
    return cursor;
  }

  /** The place a cursor names, or 400 `invalid_parameter` (`cursor`) for anything this API did not hand out. */
  decode(accountId: string, cursor: string): PagePosition {
    const issued = this.places.get(cursor);
    if (issued?.accountId === accountId) return { ...issued.position };
    const text = CURSOR.exec(cursor)?.[1];
    const bytes = text === undefined ? undefined : Buffer.from(text, 'base64url');
    // Re-encoding catches the spare low bits of the last character, which decode to the same bytes.
    if (!bytes || bytes.length !== CURSOR_BYTES || bytes.toString('base64url') !== text) throw badCursor();
    const place = bytes.subarray(0, PLACE_BYTES);
    if (!timingSafeEqual(bytes.subarray(PLACE_BYTES), this.mac(accountId, place))) throw badCursor();
    const createdAt = place.readBigInt64BE(0);
    const seq = place.readBigInt64BE(8);
    if (!isSafe(createdAt) || !isSafe(seq)) throw badCursor();
    return { createdAt: Number(createdAt), seq: Number(seq) };
  }

  private mac(accountId: string, place: Buffer): Buffer {
    return createHmac('sha256', this.secret)
      .update(accountId)
      .update('\0')
      .update(place)
      .digest()
      .subarray(0, MAC_BYTES);
  }
}

const PLACE_BYTES = 16;
const CURSORS_KEPT = 1024;
const MAC_BYTES = 16;
const CURSOR_BYTES = PLACE_BYTES + MAC_BYTES;
const CURSOR = /^cur_([A-Za-z0-9_-]{43})$/;
const isSafe = (n: bigint) => n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER);

const badCursor = () =>
  invalidParameter('cursor', "'cursor' is not a cursor this API returned; pass meta.cursor unchanged.");
