import type { Address, Parcel } from '../addresses/schema.js';
import type { PagePosition } from '../core/paging.js';
import { formatTimestamp } from '../core/time.js';
import type { Db } from '../db/database.js';
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

interface ShipmentRow {
  seq: number;
  id: string;
  account_id: string;
  status: ShipmentStatus;
  carrier: string;
  service: string;
  rate_amount: string;
  rate_currency: string;
  from_address: string;
  to_address: string;
  parcel: string;
  reference: string | null;
  tracking_number: string | null;
  label_id: string | null;
  created_at: number;
  cancelled_at: number | null;
}

const toRecord = (row: ShipmentRow): ShipmentRecord => ({
  seq: row.seq,
  id: row.id,
  accountId: row.account_id,
  status: row.status,
  carrier: row.carrier,
  service: row.service,
  rate: { amount: row.rate_amount, currency: row.rate_currency },
  from: JSON.parse(row.from_address) as Address,
  to: JSON.parse(row.to_address) as Address,
  parcel: JSON.parse(row.parcel) as Parcel,
  reference: row.reference,
  trackingNumber: row.tracking_number,
  labelId: row.label_id,
  createdAt: row.created_at,
  cancelledAt: row.cancelled_at,
});

/** The API's Shipment. `cancelled_at` is null until the shipment is cancelled. */
export function presentShipment(record: ShipmentRecord): Shipment {
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

export class ShipmentStore {
  private readonly insertStatement;
  private readonly selectById;
  private readonly updateStatusStatement;
  private readonly updateLabelStatement;
  private readonly deleteAccountStatement;
  private readonly searchStatement;

  constructor(private readonly db: Db) {
    this.insertStatement = db.prepare(
      `INSERT INTO shipments (id, account_id, status, carrier, service, rate_amount, rate_currency,
         from_address, to_address, parcel, reference, created_at)
       VALUES (@id, @accountId, @status, @carrier, @service, @rateAmount, @rateCurrency,
         @from, @to, @parcel, @reference, @createdAt)`,
    );
    this.selectById = db.prepare<[string, string], ShipmentRow>(
      'SELECT * FROM shipments WHERE id = ? AND account_id = ?',
    );
    this.updateStatusStatement = db.prepare(
      'UPDATE shipments SET status = @status, cancelled_at = coalesce(@cancelledAt, cancelled_at) WHERE seq = @seq',
    );
    this.updateLabelStatement = db.prepare(
      'UPDATE shipments SET status = @status, label_id = @labelId, tracking_number = @trackingNumber WHERE seq = @seq',
    );
    this.deleteAccountStatement = db.prepare('DELETE FROM shipments WHERE account_id = ?');
    this.searchStatement = db.prepare<Record<string, unknown>, ShipmentRow>(
      `SELECT * FROM shipments WHERE seq IN (
         SELECT seq FROM shipments WHERE id = @q AND account_id = @accountId
         UNION ALL
         SELECT seq FROM (SELECT seq FROM shipments WHERE account_id = @accountId AND tracking_number = @q
           LIMIT @scan)
         UNION ALL
         SELECT seq FROM (SELECT seq FROM shipments
           WHERE account_id = @accountId AND reference >= @q AND reference < @qEnd LIMIT @scan)
       ) AND (@status IS NULL OR status = @status)
       ORDER BY created_at DESC, seq DESC LIMIT @take`,
    );
  }

  /** Deletes the account's shipments; the counts follow by trigger. */
  deleteAccount(accountId: string): void {
    this.deleteAccountStatement.run(accountId);
  }

  insert(
    shipment: Omit<ShipmentRecord, 'seq' | 'trackingNumber' | 'labelId' | 'cancelledAt'>,
  ): ShipmentRecord {
    const result = this.insertStatement.run({
      id: shipment.id,
      accountId: shipment.accountId,
      status: shipment.status,
      carrier: shipment.carrier,
      service: shipment.service,
      rateAmount: shipment.rate.amount,
      rateCurrency: shipment.rate.currency,
      from: JSON.stringify(shipment.from),
      to: JSON.stringify(shipment.to),
      parcel: JSON.stringify(shipment.parcel),
      reference: shipment.reference,
      createdAt: shipment.createdAt,
    });
    return {
      ...shipment,
      seq: Number(result.lastInsertRowid),
      trackingNumber: null,
      labelId: null,
      cancelledAt: null,
    };
  }

  /** The shipment if it exists in this account; another account's shipment does not exist here. */
  find(accountId: string, id: string): ShipmentRecord | undefined {
    const row = this.selectById.get(id, accountId);
    return row && toRecord(row);
  }

  setStatus(
    record: ShipmentRecord,
    status: ShipmentStatus,
    cancelledAt: number | null = null,
  ): ShipmentRecord {
    this.updateStatusStatement.run({ seq: record.seq, status, cancelledAt });
    return { ...record, status, cancelledAt: cancelledAt ?? record.cancelledAt };
  }

  /** Links the shipment to its active label (or, with nulls, unlinks it) and sets its status. */
  setLabel(
    record: ShipmentRecord,
    status: ShipmentStatus,
    label: { labelId: string; trackingNumber: string } | { labelId: null; trackingNumber: null },
  ): ShipmentRecord {
    this.updateLabelStatement.run({ seq: record.seq, status, ...label });
    return { ...record, status, ...label };
  }

  /**
   * One page, newest first, after `after` when given. Fetches one row more than asked to learn
   * whether more follow without a second query.
   */
  page(
    accountId: string,
    filter: ListFilter,
    limit: number,
    after: PagePosition | undefined,
  ): { records: ShipmentRecord[]; hasMore: boolean } {
    const { where, params } = this.filterClause(accountId, filter);
    let sql = `SELECT * FROM shipments WHERE ${where}`;
    if (after) {
      sql += ' AND (created_at < @afterCreatedAt OR (created_at = @afterCreatedAt AND seq < @afterSeq))';
      Object.assign(params, { afterCreatedAt: after.createdAt, afterSeq: after.seq });
    }
    sql += ' ORDER BY created_at DESC, seq DESC LIMIT @take';
    const rows = this.statement(sql).all({ ...params, take: limit + 1 }) as ShipmentRow[];
    return { records: rows.slice(0, limit).map(toRecord), hasMore: rows.length > limit };
  }

  /**
   * The account's shipments whose id or tracking number is `q`, or whose reference starts with it,
   * newest first. Each way of matching reads its own index (migration 11) and at most `SEARCH_SCAN`
   * rows, so a prefix that matches much of a large account costs a bounded read.
   */
  search(accountId: string, q: string, status: ShipmentStatus | undefined, limit: number): ShipmentRecord[] {
    const rows = this.searchStatement.all({
      accountId,
      q,
      // Every reference that starts with `q` sorts below `q` followed by the last code point.
      qEnd: `${q}\u{10FFFF}`,
      status: status ?? null,
      scan: SEARCH_SCAN,
      take: limit,
    });
    return rows.map(toRecord);
  }

  /** From the counts the triggers keep (see migration 6): a handful of rows, whatever the account's size. */
  count(accountId: string, filter: ListFilter): number {
    const { where, params } = this.filterClause(accountId, filter);
    const row = this.statement(`SELECT coalesce(sum(n), 0) AS total FROM shipment_counts WHERE ${where}`).get(
      params,
    ) as {
      total: number;
    };
    return row.total;
  }

  private filterClause(
    accountId: string,
    filter: ListFilter,
  ): { where: string; params: Record<string, unknown> } {
    const clauses = ['account_id = @accountId'];
    const params: Record<string, unknown> = { accountId };
    if (filter.status) {
      clauses.push('status = @status');
      params.status = filter.status;
    }
    if (filter.carrier) {
      clauses.push('carrier = @carrier');
      params.carrier = filter.carrier;
    }
    return { where: clauses.join(' AND '), params };
  }

  /** The list queries come in a handful of shapes; each is prepared once and reused. */
  private readonly statements = new Map<string, ReturnType<Db['prepare']>>();
  private statement(sql: string): ReturnType<Db['prepare']> {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}
