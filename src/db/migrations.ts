/**
 * Numbered, append-only schema migrations. `PRAGMA user_version` records how many have run; never
 * edit a migration that has shipped, add the next one. Times are integer milliseconds on the owning
 * account's virtual clock.
 */
export const MIGRATIONS: readonly string[] = [
  /* 1: accounts, keys, shipments, events */ `
  CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    plan TEXT NOT NULL CHECK (plan IN ('starter', 'growth', 'enterprise')),
    created_at INTEGER NOT NULL,
    -- the account's clock: virtual time = anchor_virtual + (real now - anchor_real) * speed, unless frozen
    clock_anchor_real INTEGER NOT NULL,
    clock_anchor_virtual INTEGER NOT NULL,
    clock_speed REAL NOT NULL,
    clock_frozen INTEGER NOT NULL DEFAULT 0
  ) STRICT;

  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    last4 TEXT NOT NULL,
    scopes TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at INTEGER
  ) STRICT;
  CREATE INDEX api_keys_by_account ON api_keys (account_id, created_at);

  CREATE TABLE shipments (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    carrier TEXT NOT NULL,
    service TEXT NOT NULL,
    rate_amount TEXT NOT NULL,
    rate_currency TEXT NOT NULL,
    from_address TEXT NOT NULL,
    to_address TEXT NOT NULL,
    parcel TEXT NOT NULL,
    reference TEXT,
    tracking_number TEXT,
    label_id TEXT,
    created_at INTEGER NOT NULL,
    cancelled_at INTEGER
  ) STRICT;
  CREATE INDEX shipments_page ON shipments (account_id, created_at DESC, seq DESC);
  CREATE INDEX shipments_page_by_status ON shipments (account_id, status, created_at DESC, seq DESC);
  CREATE INDEX shipments_page_by_carrier ON shipments (account_id, carrier, created_at DESC, seq DESC);

  CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    data TEXT NOT NULL
  ) STRICT;
  CREATE INDEX events_by_account ON events (account_id, seq DESC);
  CREATE INDEX events_by_type ON events (account_id, type, seq DESC);
  `,
];
