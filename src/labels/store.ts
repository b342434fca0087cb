import { dialect, type Sql } from '../db/sql.js';
import type { TrackingStatus } from '../scenarios/vocabulary.js';

export type LabelFormat = 'pdf' | 'png' | 'zpl';
export type LabelSize = '4x6' | '4x8' | 'letter';
export type LabelStatus = 'active' | 'voided';

export interface LabelRecord {
  id: string;
  accountId: string;
  shipmentId: string;
  trackingNumber: string;
  carrier: string;
  format: LabelFormat;
  size: LabelSize;
  status: LabelStatus;
  createdAt: number;
  expiresAt: number;
  voidedAt: number | null;
  scannedAt: number | null;
  /** The scenario last started for it, its current tracking status and delivery estimate. */
  scenario: string | null;
  trackingStatus: TrackingStatus | null;
  estimatedDelivery: number | null;
}

interface LabelRow {
  id: string;
  account_id: string;
  shipment_id: string;
  tracking_number: string;
  carrier: string;
  format: LabelFormat;
  size: LabelSize;
  status: LabelStatus;
  created_at: number;
  expires_at: number;
  voided_at: number | null;
  scanned_at: number | null;
  scenario: string | null;
  tracking_status: TrackingStatus | null;
  estimated_delivery: number | null;
}

const toRecord = (row: LabelRow): LabelRecord => ({
  id: row.id,
  accountId: row.account_id,
  shipmentId: row.shipment_id,
  trackingNumber: row.tracking_number,
  carrier: row.carrier,
  format: row.format,
  size: row.size,
  status: row.status,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  voidedAt: row.voided_at,
  scannedAt: row.scanned_at,
  scenario: row.scenario,
  trackingStatus: row.tracking_status,
  estimatedDelivery: row.estimated_delivery,
});

const SQL = {
  insert: `INSERT INTO labels (id, account_id, shipment_id, tracking_number, carrier, format, size, status, created_at, expires_at)
    VALUES (@id, @accountId, @shipmentId, @trackingNumber, @carrier, @format, @size, 'active', @createdAt, @expiresAt)`,
  selectInAccount: 'SELECT * FROM labels WHERE id = ? AND account_id = ?',
  // A change reads the label it is about to write and holds it until it commits (PostgreSQL).
  selectForUpdate: {
    sqlite: 'SELECT * FROM labels WHERE id = ? AND account_id = ?',
    postgres: 'SELECT * FROM labels WHERE id = ? AND account_id = ? FOR UPDATE',
  },
  selectAnywhere: 'SELECT * FROM labels WHERE id = ?',
  selectByTrackingNumber: 'SELECT * FROM labels WHERE tracking_number = ?',
  trackingNumberTaken: 'SELECT 1 AS one FROM labels WHERE tracking_number = ?',
  markVoided: "UPDATE labels SET status = 'voided', voided_at = @at WHERE id = @id",
  markScanned: 'UPDATE labels SET scanned_at = @at WHERE id = @id AND scanned_at IS NULL',
  trackingStatus: 'UPDATE labels SET tracking_status = @status WHERE id = @labelId',
  scenario:
    'UPDATE labels SET scenario = @scenario, estimated_delivery = @estimatedDelivery WHERE id = @labelId',
  estimate: 'UPDATE labels SET estimated_delivery = @estimatedDelivery WHERE id = @labelId',
  deleteAccount: 'DELETE FROM labels WHERE account_id = ?',
};

/**
 * The `labels` table. Besides the label itself, a row keeps its parcel's tracking state (the scenario
 * playing, the current status, the delivery estimate, the first scan), which the tracking module sets
 * through the methods below. Each method runs on the `q` it is given: the database, or the
 * transaction of the change it is part of.
 */
export class LabelStore {
  async insert(tx: Sql, label: LabelRecord): Promise<LabelRecord> {
    await tx.run(SQL.insert, {
      id: label.id,
      accountId: label.accountId,
      shipmentId: label.shipmentId,
      trackingNumber: label.trackingNumber,
      carrier: label.carrier,
      format: label.format,
      size: label.size,
      createdAt: label.createdAt,
      expiresAt: label.expiresAt,
    });
    return label;
  }

  /** The label if it exists in this account; another account's label does not exist here. */
  async find(q: Sql, accountId: string, id: string): Promise<LabelRecord | undefined> {
    const row = await q.get<LabelRow>(SQL.selectInAccount, [id, accountId]);
    return row && toRecord(row);
  }

  /** `find`, holding the row for the rest of `tx`, which will change it (PostgreSQL). */
  async findForUpdate(tx: Sql, accountId: string, id: string): Promise<LabelRecord | undefined> {
    const row = await tx.get<LabelRow>(dialect(tx, SQL.selectForUpdate), [id, accountId]);
    return row && toRecord(row);
  }

  /** For pre-signed URLs, which carry their own authority instead of an account's key. */
  async findAnywhere(q: Sql, id: string): Promise<LabelRecord | undefined> {
    const row = await q.get<LabelRow>(SQL.selectAnywhere, [id]);
    return row && toRecord(row);
  }

  async findByTrackingNumber(q: Sql, trackingNumber: string): Promise<LabelRecord | undefined> {
    const row = await q.get<LabelRow>(SQL.selectByTrackingNumber, [trackingNumber]);
    return row && toRecord(row);
  }

  async isTrackingNumberTaken(q: Sql, trackingNumber: string): Promise<boolean> {
    return (await q.get(SQL.trackingNumberTaken, [trackingNumber])) !== undefined;
  }

  async markVoided(tx: Sql, label: LabelRecord, at: number): Promise<LabelRecord> {
    await tx.run(SQL.markVoided, { id: label.id, at });
    return { ...label, status: 'voided', voidedAt: at };
  }

  /** The carrier's first scan; later scans keep the first time. */
  async markScanned(tx: Sql, labelId: string, at: number): Promise<void> {
    await tx.run(SQL.markScanned, { id: labelId, at });
  }

  async setTrackingStatus(tx: Sql, labelId: string, status: TrackingStatus): Promise<void> {
    await tx.run(SQL.trackingStatus, { labelId, status });
  }

  /** The scenario now playing for the label, and the delivery it plans. */
  async setScenario(tx: Sql, labelId: string, scenario: string, estimatedDelivery: number): Promise<void> {
    await tx.run(SQL.scenario, { labelId, scenario, estimatedDelivery });
  }

  async setEstimate(tx: Sql, labelId: string, estimatedDelivery: number): Promise<void> {
    await tx.run(SQL.estimate, { labelId, estimatedDelivery });
  }

  async deleteAccount(tx: Sql, accountId: string): Promise<void> {
    await tx.run(SQL.deleteAccount, [accountId]);
  }
}
