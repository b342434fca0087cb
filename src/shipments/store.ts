import type { Address, Parcel } from '../addresses/schema.js';
import { type JsonText, toJsonText } from '../core/json.js';
import type { PagePosition } from '../core/paging.js';
import { storableText } from '../core/text.js';
import { formatTimestamp } from '../core/time.js';
import { accountKeyOf } from '../db/account-keys.js';
import { afterParams, afterPlace, newestFirst } from '../db/paging.js';
import { dialect, type Sql } from '../db/sql.js';
import { packShipmentBody, unpackShipmentBody } from './body-packing.js';
import type { Shipment, ShipmentStatus } from './schema.js';

/** A shipment as stored: the API shape plus the ordering key and raw times. */
export interface ShipmentRecord {
  seq: number;
  id: string;
  accountId: string;
  status: ShipmentStatus;
  carrier: string;
  service: string;
  rate: { amount: string; currency: string };
  from: Address;
  to: Address;
  parcel: Parcel;
  reference: string | null;
  trackingNumber: string | null;
  labelId: string | null;
  createdAt: number;
  cancelledAt: number | null;
}

/** The columns that lists, searches and counts filter or order on, beside the shipment's JSON. */
interface ShipmentRow {
  seq: number;
  id: string;
  account_id: string;
  status: ShipmentStatus;
  carrier: string;
  reference: string | null;
  tracking_number: string | null;
  created_at: number;
  cancelled_at: number | null;
  body: string;
}

/** A row's place in the order of lists. */
interface PlaceRow {
  seq: number;
  created_at: number;
}

/** The shipment that is not yet stored. */
export type NewShipment = Omit<ShipmentRecord, 'seq' | 'trackingNumber' | 'labelId' | 'cancelledAt'>;

/** A page of shipments as JSON text, with what its cursor names. */
export interface ShipmentPage {
  /** Each shipment's JSON, newest first. */
  bodies: string[];
  hasMore: boolean;
  /** The last shipment of the page, for the next page's cursor. */
  last: PagePosition | undefined;
}

const toRecord = (row: ShipmentRow): ShipmentRecord => {
  const shipment = JSON.parse(unpackShipmentBody(row.body)) as Shipment;
  return {
    seq: row.seq,
    id: row.id,
    accountId: row.account_id,
    status: row.status,
    carrier: row.carrier,
    service: shipment.service,
    rate: shipment.rate,
    from: shipment.from,
    to: shipment.to,
    parcel: shipment.parcel,
    reference: row.reference,
    trackingNumber: row.tracking_number,
    labelId: shipment.label_id,
    createdAt: row.created_at,
    cancelledAt: row.cancelled_at,
  };
};

/**
 * A shipment's record as created, its fields named one by one: a spread that adds fields its source
 * lacks (`{ ...shipment, labelId: null }`) makes V8 build a new hidden class for every object it
 * makes, in the old generation, where each creation's classes stayed until the next full collection.
 */
function newRecord(shipment: NewShipment, reference: string | null, seq: number): ShipmentRecord {
  return {
    id: shipment.id,
    accountId: shipment.accountId,
    status: shipment.status,
    carrier: shipment.carrier,
    service: shipment.service,
    rate: shipment.rate,
    from: shipment.from,
    to: shipment.to,
    parcel: shipment.parcel,
    reference,
    createdAt: shipment.createdAt,
    trackingNumber: null,
    labelId: null,
    cancelledAt: null,
    seq,
  };
}

/** The API's Shipment. `cancelled_at` is null until the shipment is cancelled. */
export function presentShipment(record: Omit<ShipmentRecord, 'seq' | 'accountId'>): Shipment {
  return {
    id: record.id,
    status: record.status,
    carrier: record.carrier,
    service: record.service,
    rate: record.rate,
    from: record.from,
    to: record.to,
    parcel: record.parcel,
    reference: record.reference,
    tracking_number: record.trackingNumber,
    label_id: record.labelId,
    created_at: formatTimestamp(record.createdAt),
    cancelled_at: record.cancelledAt === null ? null : formatTimestamp(record.cancelledAt),
  };
}

/** How many rows a search reads for each way of matching, at most. */
export const SEARCH_SCAN = 1000;

export interface ListFilter {
  status?: ShipmentStatus | undefined;
  carrier?: string | undefined;
}

const SQL = {
  insert: `INSERT INTO shipments (id, account_id, account_key, status, carrier, reference, created_at, body)
    VALUES (@id, @accountId, ${accountKeyOf('@accountId')}, @status, @carrier, @reference, @createdAt, @body)
    RETURNING seq`,
  selectById: 'SELECT * FROM shipments WHERE id = ? AND account_id = ?',
  // FOR UPDATE on PostgreSQL: a change reads the row it is about to write and holds it until it commits.
  selectByIdForUpdate: {
    sqlite: 'SELECT * FROM shipments WHERE id = ? AND account_id = ?',
    postgres: 'SELECT * FROM shipments WHERE id = ? AND account_id = ? FOR UPDATE',
  },
  selectBodyById: 'SELECT body FROM shipments WHERE id = ? AND account_id = ?',
  updateStatus:
    'UPDATE shipments SET status = @status, cancelled_at = @cancelledAt, body = @body WHERE seq = @seq',
  updateLabel:
    'UPDATE shipments SET status = @status, tracking_number = @trackingNumber, body = @body WHERE seq = @seq',
  deleteAccount: `DELETE FROM shipments WHERE account_key = ${accountKeyOf('?')}`,
  search: `SELECT body FROM shipments WHERE seq IN (
      SELECT seq FROM shipments WHERE id = @q AND account_id = @accountId
      UNION ALL
      SELECT seq FROM (SELECT seq FROM shipments
        WHERE account_key = ${accountKeyOf('@accountId')} AND tracking_number = @q LIMIT @scan) AS by_tracking
      UNION ALL
      SELECT seq FROM (SELECT seq FROM shipments
        WHERE account_key = ${accountKeyOf('@accountId')} AND reference >= @q AND reference < @qEnd LIMIT @scan) AS by_reference
    ) AND (CAST(@status AS TEXT) IS NULL OR status = @status)
    ORDER BY created_at DESC, seq DESC LIMIT @take`,
};

/**
 * The shipments table. Each row keeps the shipment's API JSON (`body`, packed: body-packing.ts),
 * written with the row and rewritten by every change, beside the columns that lists, searches and
 * counts filter on: a read sends that text as it is, and a list joins its rows' texts, with nothing
 * parsed or serialised again. Lists and searches find an account's rows by its key.
 *
 * Writes take the transaction they belong to (`tx`); reads that serve the API alone run on the
 * database.
 */
export class ShipmentStore {
  constructor(private readonly db: Sql) {}

  /** Deletes the account's shipments; the counts follow by trigger. */
  async deleteAccount(tx: Sql, accountId: string): Promise<void> {
    this.changed(accountId);
    await tx.run(SQL.deleteAccount, [accountId]);
    this.changed(accountId);
  }

  /**
   * How many times the account's shipments have been written, counted before and after each write:
   * what a read answered stands while this is unchanged (see `PageCache`). Every write of the table is
   * this store's, so none goes uncounted.
   */
  changesOf(accountId: string): number {
    return this.changes.get(accountId) ?? 0;
  }

  private readonly changes = new Map<string, number>();
  private changed(accountId: string): void {
    this.changes.set(accountId, (this.changes.get(accountId) ?? 0) + 1);
  }

  /**
   * Stores a new shipment. Answers the record and its JSON text, serialised once: the answer to its
   * creation and its event's `data`.
   */
  async insert(
    tx: Sql,
    shipment: NewShipment,
  ): Promise<{ record: ShipmentRecord; json: JsonText<Shipment> }> {
    const json = toJsonText(presentShipment(newRecord(shipment, shipment.reference, 0)));
    // The creation answers the reference as sent; the row, and so every read, as it is stored.
    const reference = wellFormed(shipment.reference);
    const storedJson =
      reference === shipment.reference
        ? json
        : toJsonText(presentShipment(newRecord(shipment, reference, 0)));
    this.changed(shipment.accountId);
    const row = await tx.get<{ seq: number }>(SQL.insert, {
      id: shipment.id,
      accountId: shipment.accountId,
      status: shipment.status,
      carrier: shipment.carrier,
      reference,
      createdAt: shipment.createdAt,
      body: packShipmentBody(storedJson),
    });
    this.changed(shipment.accountId);
    return { record: newRecord(shipment, reference, (row as { seq: number }).seq), json };
  }

  /** The shipment if it exists in this account; another account's shipment does not exist here. */
  async find(q: Sql, accountId: string, id: string): Promise<ShipmentRecord | undefined> {
    const row = await q.get<ShipmentRow>(SQL.selectById, [id, accountId]);
    return row && toRecord(row);
  }

  /** `find`, holding the row for the rest of the transaction `tx` (PostgreSQL), which will change it. */
  async findForUpdate(tx: Sql, accountId: string, id: string): Promise<ShipmentRecord | undefined> {
    const row = await tx.get<ShipmentRow>(dialect(tx, SQL.selectByIdForUpdate), [id, accountId]);
    return row && toRecord(row);
  }

  /** The shipment's JSON, as `GET /v1/shipments/:id` answers it; undefined as `find` would be. */
  async findJson(accountId: string, id: string): Promise<JsonText<Shipment> | undefined> {
    const body = await this.db.value<string>(SQL.selectBodyById, [id, accountId]);
    return body === undefined ? undefined : (unpackShipmentBody(body) as JsonText<Shipment>);
  }

  async setStatus(
    tx: Sql,
    record: ShipmentRecord,
    status: ShipmentStatus,
    cancelledAt: number | null = null,
  ): Promise<ShipmentRecord> {
    const updated = { ...record, status, cancelledAt: cancelledAt ?? record.cancelledAt };
    this.changed(record.accountId);
    await tx.run(SQL.updateStatus, {
      seq: record.seq,
      status,
      cancelledAt: updated.cancelledAt,
      body: packShipmentBody(toJsonText(presentShipment(updated))),
    });
    this.changed(record.accountId);
    return updated;
  }

  /** Links the shipment to its active label (or, with nulls, unlinks it) and sets its status. */
  async setLabel(
    tx: Sql,
    record: ShipmentRecord,
    status: ShipmentStatus,
    label: { labelId: string; trackingNumber: string } | { labelId: null; trackingNumber: null },
  ): Promise<ShipmentRecord> {
    const updated = { ...record, status, ...label };
    this.changed(record.accountId);
    await tx.run(SQL.updateLabel, {
      seq: record.seq,
      status,
      trackingNumber: label.trackingNumber,
      body: packShipmentBody(toJsonText(presentShipment(updated))),
    });
    this.changed(record.accountId);
    return updated;
  }

  /**
   * One page, newest first, after `after` when given: the rows' JSON, and whether more follow. Two
   * reads of the same index: the page's last place and the one after it (whether more follow), then
   * the JSON alone, one string a row.
   */
  async page(
    accountId: string,
    filter: ListFilter,
    limit: number,
    after: PagePosition | undefined,
  ): Promise<ShipmentPage> {
    const { edge, bodies } = this.pageStatements(filter, after !== undefined);
    const params = {
      accountId,
      status: filter.status,
      carrier: filter.carrier,
      ...afterParams(after),
      take: limit,
      skip: limit - 1,
    };
    const places = await this.db.all<PlaceRow>(edge, params);
    const last = places[0];
    return {
      bodies: (await this.db.column<string>(bodies, params)).map(unpackShipmentBody),
      hasMore: places.length > 1,
      last: last && { createdAt: last.created_at, seq: last.seq },
    };
  }

  /**
   * The JSON of the account's shipments whose id or tracking number is `q`, or whose reference starts
   * with it, newest first. Each way of matching reads its own index and at most `SEARCH_SCAN` rows, so
   * a prefix that matches much of a large account costs a bounded read.
   */
  async search(
    accountId: string,
    q: string,
    status: ShipmentStatus | undefined,
    limit: number,
  ): Promise<string[]> {
    const bodies = await this.db.column<string>(SQL.search, {
      accountId,
      q,
      // Every reference that starts with `q` sorts below `q` followed by the last code point.
      qEnd: `${q}\u{10FFFF}`,
      status: status ?? null,
      scan: SEARCH_SCAN,
      take: limit,
    });
    return bodies.map(unpackShipmentBody);
  }

  /** From the counts the triggers keep: a handful of rows, whatever the account's size. */
  async count(accountId: string, filter: ListFilter): Promise<number> {
    return Number(
      await this.db.value<number>(this.countStatement(filter), {
        accountId,
        status: filter.status,
        carrier: filter.carrier,
      }),
    );
  }

  /** Shipments are found by their account's key, their counts by its id. */
  private filterClause(filter: ListFilter, account = `account_key = ${accountKeyOf('@accountId')}`): string {
    let where = account;
    if (filter.status) where += ' AND status = @status';
    if (filter.carrier) where += ' AND carrier = @carrier';
    return where;
  }

  /** A page's two statements for each shape of list (the filters given, a cursor or not), made once. */
  private readonly pages = new Map<string, { edge: string; bodies: string }>();
  private pageStatements(filter: ListFilter, afterCursor: boolean) {
    const shape = `${filter.status ? 's' : ''}${filter.carrier ? 'c' : ''}${afterCursor ? 'a' : ''}`;
    let statements = this.pages.get(shape);
    if (!statements) {
      let rows = `FROM shipments WHERE ${this.filterClause(filter)}`;
      if (afterCursor) rows += ` AND ${afterPlace()}`;
      rows += ` ${newestFirst()}`;
      statements = {
        edge: `SELECT seq, created_at ${rows} LIMIT 2 OFFSET @skip`,
        bodies: `SELECT body ${rows} LIMIT @take`,
      };
      this.pages.set(shape, statements);
    }
    return statements;
  }

  /** Counts by filter, one statement for each shape. */
  private readonly counts = new Map<string, string>();
  private countStatement(filter: ListFilter): string {
    const shape = `${filter.status ? 's' : ''}${filter.carrier ? 'c' : ''}`;
    let statement = this.counts.get(shape);
    if (!statement) {
      statement = `SELECT coalesce(sum(n), 0) FROM shipment_counts WHERE ${this.filterClause(filter, 'account_id = @accountId')}`;
      this.counts.set(shape, statement);
    }
    return statement;
  }
}

/**
 * A reference as the database holds it (`storableText`: a lone surrogate as U+FFFD). Reads have always
 * answered the reference as stored, so the stored JSON, which keeps a lone surrogate as an escape, is
 * made to say the same.
 */
const wellFormed = (text: string | null): string | null => (text === null ? null : storableText(text));
