import type { Db } from '../db/database.js';
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

/**
 * The `labels` table. Besides the label itself, a row keeps its parcel's tracking state (the scenario
 * playing, the current status, the delivery estimate, the first scan), which the tracking module sets
 * through the methods below.
 */
export class LabelStore {
  private readonly insertStatement;
  private readonly selectInAccount;
  private readonly selectAnywhere;
  private readonly selectByTrackingNumber;
  private readonly trackingNumberTaken;
  private readonly voidStatement;
  private readonly scanStatement;
  private readonly trackingStatusStatement;
  private readonly scenarioStatement;
  private readonly estimateStatement;
  private readonly deleteAccountStatement;

  constructor(db: Db) {
    this.insertStatement = db.prepare(
      `INSERT INTO labels (id, account_id, shipment_id, tracking_number, carrier, format, size, status, created_at, expires_at)
       VALUES (@id, @accountId, @shipmentId, @trackingNumber, @carrier, @format, @size, 'active', @createdAt, @expiresAt)`,
    );
    this.selectInAccount = db.prepare<[string, string], LabelRow>(
      'SELECT * FROM labels WHERE id = ? AND account_id = ?',
    );
    this.selectAnywhere = db.prepare<[string], LabelRow>('SELECT * FROM labels WHERE id = ?');
    this.selectByTrackingNumber = db.prepare<[string], LabelRow>(
      'SELECT * FROM labels WHERE tracking_number = ?',
    );
    this.trackingNumberTaken = db.prepare<[string], { one: number }>(
      'SELECT 1 AS one FROM labels WHERE tracking_number = ?',
    );
    this.voidStatement = db.prepare("UPDATE labels SET status = 'voided', voided_at = @at WHERE id = @id");
    this.scanStatement = db.prepare(
      'UPDATE labels SET scanned_at = @at WHERE id = @id AND scanned_at IS NULL',
    );
    this.trackingStatusStatement = db.prepare(
      'UPDATE labels SET tracking_status = @status WHERE id = @labelId',
    );
    this.scenarioStatement = db.prepare(
      'UPDATE labels SET scenario = @scenario, estimated_delivery = @estimatedDelivery WHERE id = @labelId',
    );
    this.estimateStatement = db.prepare(
      'UPDATE labels SET estimated_delivery = @estimatedDelivery WHERE id = @labelId',
    );
    this.deleteAccountStatement = db.prepare('DELETE FROM labels WHERE account_id = ?');
  }

  insert(label: LabelRecord): LabelRecord {
    this.insertStatement.run({
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
  find(accountId: string, id: string): LabelRecord | undefined {
    const row = this.selectInAccount.get(id, accountId);
    return row && toRecord(row);
  }

  /** For pre-signed URLs, which carry their own authority instead of an account's key. */
  findAnywhere(id: string): LabelRecord | undefined {
    const row = this.selectAnywhere.get(id);
    return row && toRecord(row);
  }

  findByTrackingNumber(trackingNumber: string): LabelRecord | undefined {
    const row = this.selectByTrackingNumber.get(trackingNumber);
    return row && toRecord(row);
  }

  isTrackingNumberTaken(trackingNumber: string): boolean {
    return this.trackingNumberTaken.get(trackingNumber) !== undefined;
  }

  markVoided(label: LabelRecord, at: number): LabelRecord {
    this.voidStatement.run({ id: label.id, at });
    return { ...label, status: 'voided', voidedAt: at };
  }

  /** The carrier's first scan; later scans keep the first time. */
  markScanned(labelId: string, at: number): void {
    this.scanStatement.run({ id: labelId, at });
  }

  setTrackingStatus(labelId: string, status: TrackingStatus): void {
    this.trackingStatusStatement.run({ labelId, status });
  }

  /** The scenario now playing for the label, and the delivery it plans. */
  setScenario(labelId: string, scenario: string, estimatedDelivery: number): void {
    this.scenarioStatement.run({ labelId, scenario, estimatedDelivery });
  }

  setEstimate(labelId: string, estimatedDelivery: number): void {
    this.estimateStatement.run({ labelId, estimatedDelivery });
  }

  deleteAccount(accountId: string): void {
    this.deleteAccountStatement.run(accountId);
  }
}
