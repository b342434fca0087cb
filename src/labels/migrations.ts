import type { Migrations } from '../db/migrations.js';

/**
 * Labels, each with its parcel's tracking state (the scenario it plays, its status, its estimated
 * delivery), which the tracking module sets through the label store's methods.
 */
export const LABELS_MIGRATIONS: Migrations = {
  sqlite: [
    `
    CREATE TABLE labels (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      shipment_id TEXT NOT NULL REFERENCES shipments(id) ON DELETE CASCADE,
      tracking_number TEXT NOT NULL UNIQUE,
      carrier TEXT NOT NULL,
      format TEXT NOT NULL CHECK (format IN ('pdf', 'png', 'zpl')),
      size TEXT NOT NULL CHECK (size IN ('4x6', '4x8', 'letter')),
      status TEXT NOT NULL CHECK (status IN ('active', 'voided')),
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      voided_at INTEGER,
      -- set when the carrier first scans the parcel (its tracking leaves pre_transit); a scanned label cannot be voided
      scanned_at INTEGER,
      scenario TEXT,
      tracking_status TEXT,
      estimated_delivery INTEGER
    ) STRICT;
    CREATE INDEX labels_by_shipment ON labels (shipment_id);
    CREATE INDEX labels_by_account ON labels (account_id, created_at);
    `,
  ],
  postgres: [
    `
    CREATE TABLE labels (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      shipment_id TEXT NOT NULL REFERENCES shipments(id) ON DELETE CASCADE,
      tracking_number TEXT NOT NULL UNIQUE,
      carrier TEXT NOT NULL,
      format TEXT NOT NULL CHECK (format IN ('pdf', 'png', 'zpl')),
      size TEXT NOT NULL CHECK (size IN ('4x6', '4x8', 'letter')),
      status TEXT NOT NULL CHECK (status IN ('active', 'voided')),
      created_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL,
      voided_at BIGINT,
      scanned_at BIGINT,
      scenario TEXT,
      tracking_status TEXT,
      estimated_delivery BIGINT
    );
    CREATE INDEX labels_by_shipment ON labels (shipment_id);
    CREATE INDEX labels_by_account ON labels (account_id, created_at);
    `,
  ],
};
