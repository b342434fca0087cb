import type { Address, Parcel } from '../addresses/schema.js';
import { type JsonText, toJsonText } from '../core/json.js';
import type { PagePosition } from '../core/paging.js';
import { formatTimestamp } from '../core/time.js';
import { accountKeyOf } from '../db/account-keys.js';
import type { Db } from '../db/database.js';
import { packShipmentBody, unpackShipmentBody } from './body-packing.js';
import type { Shipment, ShipmentStatus } from './schema.js';

type Statement = ReturnType<Db['prepare']>;

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

/**
 * Whether a string holds a lone surrogate, which SQLite's UTF-8 cannot hold as it is. (ES2024's
 * `isWellFormed`, in Node 20 and later; `/\p{Surrogate}/u` said the same through ICU, whose property
 * data, touched by the first shipment, kept 1.3 MiB more of node's binary resident.)
 */
const hasLoneSurrogate = (text: string) => !(text as string & { isWellFormed(): boolean }).isWellFormed();

/** How many rows a search reads for each way of matching, at most. */
export const SEARCH_SCAN = 1000;

export interface ListFilter {
  status?: ShipmentStatus | undefined;
  carrier?: string | undefined;
}

/**
 * The shipments table. Each row keeps the shipment's API JSON (`body`, packed: body-packing.ts),
 * written with the row and rewritten by every change, beside the columns that lists, searches and
 * counts filter on: a read sends that text as it is, and a list joins its rows' texts, with nothing
 * parsed or serialised again. Lists and searches find an account's rows by its key (migration 16).
 */
export class ShipmentStore {
  private readonly insertStatement;
  private readonly selectById;
  private readonly selectBodyById;
  private readonly updateStatusStatement;
  private readonly updateLabelStatement;
  private readonly deleteAccountStatement;
  private readonly searchStatement;
  private readonly storedText;

  constructor(private readonly db: Db) {
    this.insertStatement = db.prepare(
      `INSERT INTO shipments (id, account_id, account_key, status, carrier, reference, created_at, body)
       VALUES (@id, @accountId, ${accountKeyOf('@accountId')}, @status, @carrier, @reference, @createdAt, @body)`,
    );
    this.selectById = db.prepare<[string, string], ShipmentRow>(
      'SELECT * FROM shipments WHERE id = ? AND account_id = ?',
    );
    this.selectBodyById = db
      .prepare<[string, string], string>('SELECT body FROM shipments WHERE id = ? AND account_id = ?')
      .pluck();
    this.updateStatusStatement = db.prepare(
      'UPDATE shipments SET status = @status, cancelled_at = @cancelledAt, body = @body WHERE seq = @seq',
    );
    this.updateLabelStatement = db.prepare(
      'UPDATE shipments SET status = @status, tracking_number = @trackingNumber, body = @body WHERE seq = @seq',
    );
    this.deleteAccountStatement = db.prepare(
      `DELETE FROM shipments WHERE account_key = ${accountKeyOf('?')}`,
    );
    this.searchStatement = db.prepare<Record<string, unknown>, string>(
      `SELECT body FROM shipments WHERE seq IN (
         SELECT seq FROM shipments WHERE id = @q AND account_id = @accountId
         UNION ALL
         SELECT seq FROM (SELECT seq FROM shipments
           WHERE account_key = ${accountKeyOf('@accountId')} AND tracking_number = @q LIMIT @scan)
         UNION ALL
         SELECT seq FROM (SELECT seq FROM shipments
           WHERE account_key = ${accountKeyOf('@accountId')} AND reference >= @q AND reference < @qEnd LIMIT @scan)
       ) AND (@status IS NULL OR status = @status)
       ORDER BY created_at DESC, seq DESC LIMIT @take`,
    );
    this.searchStatement.pluck();
    this.storedText = db.prepare<[string], string>('SELECT ?').pluck();
  }

  /** Deletes the account's shipments; the counts follow by trigger. */
  deleteAccount(accountId: string): void {
    this.changed(accountId);
    this.deleteAccountStatement.run(accountId);
  }

  /**
   * How many times the account's shipments have been written, counted before each write: what a read
   * answered stands while this is unchanged (see `PageCache`). Every write of the table is this
   * store's, so none goes uncounted.
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
  insert(shipment: NewShipment): { record: ShipmentRecord; json: JsonText<Shipment> } {
    const unstored = { ...shipment, trackingNumber: null, labelId: null, cancelledAt: null };
    const json = toJsonText(presentShipment(unstored));
    this.changed(shipment.accountId);
    const result = this.insertStatement.run({
      id: shipment.id,
      accountId: shipment.accountId,
      status: shipment.status,
      carrier: shipment.carrier,
      reference: shipment.reference,
      createdAt: shipment.createdAt,
      body: this.storedBody(unstored, json),
    });
    return { record: { ...unstored, seq: Number(result.lastInsertRowid) }, json };
  }

  /** The shipment if it exists in this account; another account's shipment does not exist here. */
  find(accountId: string, id: string): ShipmentRecord | undefined {
    const row = this.selectById.get(id, accountId);
    return row && toRecord(row);
  }

  /** The shipment's JSON, as `GET /v1/shipments/:id` answers it; undefined as `find` would be. */
  findJson(accountId: string, id: string): JsonText<Shipment> | undefined {
    const body = this.selectBodyById.get(id, accountId) as string | undefined;
    return body === undefined ? undefined : (unpackShipmentBody(body) as JsonText<Shipment>);
  }

  setStatus(
    record: ShipmentRecord,
    status: ShipmentStatus,
    cancelledAt: number | null = null,
  ): ShipmentRecord {
    const updated = { ...record, status, cancelledAt: cancelledAt ?? record.cancelledAt };
    this.changed(record.accountId);
    this.updateStatusStatement.run({
      seq: record.seq,
      status,
      cancelledAt: updated.cancelledAt,
      body: this.storedBody(updated),
    });
    return updated;
  }

  /** Links the shipment to its active label (or, with nulls, unlinks it) and sets its status. */
  setLabel(
    record: ShipmentRecord,
    status: ShipmentStatus,
    label: { labelId: string; trackingNumber: string } | { labelId: null; trackingNumber: null },
  ): ShipmentRecord {
    const updated = { ...record, status, ...label };
    this.changed(record.accountId);
    this.updateLabelStatement.run({
      seq: record.seq,
      status,
      trackingNumber: label.trackingNumber,
      body: this.storedBody(updated),
    });
    return updated;
  }

  /**
   * One page, newest first, after `after` when given: the rows' JSON, and whether more follow. Two
   * reads of the same index: the page's last place and the one after it (whether more follow), then
   * the JSON alone, one string a row (better-sqlite3 builds an object a row otherwise, which cost more
   * than reading the rows).
   */
  page(accountId: string, filter: ListFilter, limit: number, after: PagePosition | undefined): ShipmentPage {
    const { edge, bodies } = this.pageStatements(filter, after !== undefined);
    const params = {
      accountId,
      status: filter.status,
      carrier: filter.carrier,
      afterCreatedAt: after?.createdAt,
      afterSeq: after?.seq,
      take: limit,
    };
    const places = edge.all(params) as PlaceRow[];
    const last = places[0];
    return {
      bodies: (bodies.all(params) as string[]).map(unpackShipmentBody),
      hasMore: places.length > 1,
      last: last && { createdAt: last.created_at, seq: last.seq },
    };
  }

  /**
   * The JSON of the account's shipments whose id or tracking number is `q`, or whose reference starts
   * with it, newest first. Each way of matching reads its own index (migration 11) and at most
   * `SEARCH_SCAN` rows, so a prefix that matches much of a large account costs a bounded read.
   */
  search(accountId: string, q: string, status: ShipmentStatus | undefined, limit: number): string[] {
    return this.searchStatement
      .all({
        accountId,
        q,
        // Every reference that starts with `q` sorts below `q` followed by the last code point.
        qEnd: `${q}\u{10FFFF}`,
        status: status ?? null,
        scan: SEARCH_SCAN,
        take: limit,
      })
      .map(unpackShipmentBody);
  }

  /** From the counts the triggers keep (see migration 6): a handful of rows, whatever the account's size. */
  count(accountId: string, filter: ListFilter): number {
    return this.countStatement(filter).get({
      accountId,
      status: filter.status,
      carrier: filter.carrier,
    }) as number;
  }

  /**
   * The body to store: the JSON a read answers, the shipment as its columns hold it, packed. A
   * reference is the one text the client chose that is stored in a column of its own, and SQLite's
   * UTF-8 replaces a lone surrogate in it; reads have always answered the reference as stored, so the
   * stored JSON says the same.
   */
  private storedBody(record: Omit<ShipmentRecord, 'seq' | 'accountId'>, json?: string): string {
    const { reference } = record;
    if (reference !== null && hasLoneSurrogate(reference)) {
      return packShipmentBody(
        toJsonText(presentShipment({ ...record, reference: this.storedText.get(reference) as string })),
      );
    }
    return packShipmentBody(json ?? toJsonText(presentShipment(record)));
  }

  /** Shipments are found by their account's key (see migration 16), their counts by its id. */
  private filterClause(filter: ListFilter, account = `account_key = ${accountKeyOf('@accountId')}`): string {
    let where = account;
    if (filter.status) where += ' AND status = @status';
    if (filter.carrier) where += ' AND carrier = @carrier';
    return where;
  }

  /** A page's two statements for each shape of list (the filters given, a cursor or not), made once. */
  private readonly pages = new Map<string, { edge: Statement; bodies: Statement }>();
  private pageStatements(filter: ListFilter, afterCursor: boolean) {
    const shape = `${filter.status ? 's' : ''}${filter.carrier ? 'c' : ''}${afterCursor ? 'a' : ''}`;
    let statements = this.pages.get(shape);
    if (!statements) {
      let rows = `FROM shipments WHERE ${this.filterClause(filter)}`;
      if (afterCursor)
        rows += ' AND (created_at < @afterCreatedAt OR (created_at = @afterCreatedAt AND seq < @afterSeq))';
      rows += ' ORDER BY created_at DESC, seq DESC';
      statements = {
        edge: this.db.prepare(`SELECT seq, created_at ${rows} LIMIT 2 OFFSET @take - 1`),
        bodies: this.db.prepare(`SELECT body ${rows} LIMIT @take`).pluck(),
      };
      this.pages.set(shape, statements);
    }
    return statements;
  }

  /** Counts by filter, one statement for each shape. */
  private readonly counts = new Map<string, Statement>();
  private countStatement(filter: ListFilter): Statement {
    const shape = `${filter.status ? 's' : ''}${filter.carrier ? 'c' : ''}`;
    let statement = this.counts.get(shape);
    if (!statement) {
      statement = this.db
        .prepare(
          `SELECT coalesce(sum(n), 0) FROM shipment_counts WHERE ${this.filterClause(filter, 'account_id = @accountId')}`,
        )
        .pluck();
      this.counts.set(shape, statement);
    }
    return statement;
  }
}
