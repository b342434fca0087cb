/**
 * The schema's history before each module owned its tables: numbered migrations, `PRAGMA
 * user_version` counting those that had run. A data directory written by a sandbox of that time is
 * brought to the last of them (16), whose tables are each module's first migration; see
 * migrations.ts. Frozen: nothing is ever added here.
 */
export const LEGACY_MIGRATIONS: readonly string[] = [
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
    -- the envelope as sent, byte for byte: every webhook and every retry sends these exact bytes
    body TEXT NOT NULL
  ) STRICT;
  CREATE INDEX events_by_account ON events (account_id, seq DESC);
  CREATE INDEX events_by_type ON events (account_id, type, seq DESC);
  `,
  /* 2: labels, and the sandbox's own settings (the URL-signing secret) */ `
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
    scanned_at INTEGER
  ) STRICT;
  CREATE INDEX labels_by_shipment ON labels (shipment_id);
  CREATE INDEX labels_by_account ON labels (account_id, created_at);

  CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) STRICT;
  `,
  /* 3: the durable scheduler's jobs, and tracking events */ `
  CREATE TABLE jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    -- what the job is about (a label id, a delivery id), so pending work can be found and dropped
    subject TEXT NOT NULL,
    payload TEXT NOT NULL,
    due_at INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done', 'failed', 'cancelled')),
    created_at INTEGER NOT NULL,
    finished_at INTEGER,
    error TEXT
  ) STRICT;
  CREATE INDEX jobs_due ON jobs (state, account_id, due_at, seq);
  CREATE INDEX jobs_by_subject ON jobs (subject, state);

  CREATE TABLE tracking_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    label_id TEXT NOT NULL REFERENCES labels(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    description TEXT NOT NULL,
    location TEXT NOT NULL,
    occurred_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX tracking_events_by_label ON tracking_events (label_id, seq);

  ALTER TABLE labels ADD COLUMN scenario TEXT;
  ALTER TABLE labels ADD COLUMN tracking_status TEXT;
  ALTER TABLE labels ADD COLUMN estimated_delivery INTEGER;
  ALTER TABLE accounts ADD COLUMN default_scenario TEXT NOT NULL DEFAULT 'standard';
  `,
  /* 4: webhooks, their delivery attempts, the e-mail outbox */ `
  -- the account's own retry ladder (JSON array of milliseconds), or NULL for the server's
  ALTER TABLE accounts ADD COLUMN webhook_retry_schedule TEXT;

  CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    secret TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'failed', 'disabled')),
    created_at INTEGER NOT NULL,
    deleted_at INTEGER
  ) STRICT;
  CREATE INDEX webhooks_by_account ON webhooks (account_id, created_at);

  CREATE TABLE webhook_attempts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    event_id TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    attempt INTEGER NOT NULL,
    redelivery INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL CHECK (status IN ('scheduled', 'sending', 'succeeded', 'failed', 'cancelled')),
    scheduled_at INTEGER NOT NULL,
    sent_at INTEGER,
    response_status INTEGER,
    response_excerpt TEXT,
    duration_ms INTEGER,
    error TEXT CHECK (error IN ('timeout', 'connection', 'http')),
    error_message TEXT,
    next_attempt_at INTEGER
  ) STRICT;
  CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, seq);
  CREATE INDEX webhook_attempts_by_status ON webhook_attempts (status);

  CREATE TABLE emails (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    recipient TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX emails_by_account ON emails (account_id, seq);
  `,
  /* 5: rate-limit switch per account, injected faults */ `
  ALTER TABLE accounts ADD COLUMN rate_limits_enabled INTEGER NOT NULL DEFAULT 1;

  CREATE TABLE faults (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    method TEXT,
    path TEXT NOT NULL,
    status INTEGER,
    code TEXT,
    retry_after INTEGER,
    delay_ms INTEGER NOT NULL DEFAULT 0,
    drop_connection INTEGER NOT NULL DEFAULT 0,
    times INTEGER,
    remaining INTEGER,
    created_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX faults_by_account ON faults (account_id, seq);
  `,
  /* 6: shipment counts per account, status and carrier, kept by triggers so list totals cost no scan */ `
  CREATE TABLE shipment_counts (
    account_id TEXT NOT NULL,
    status TEXT NOT NULL,
    carrier TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (account_id, status, carrier)
  ) STRICT, WITHOUT ROWID;
  INSERT INTO shipment_counts SELECT account_id, status, carrier, count(*) FROM shipments GROUP BY 1, 2, 3;

  CREATE TRIGGER shipment_counts_insert AFTER INSERT ON shipments BEGIN
    INSERT INTO shipment_counts (account_id, status, carrier, n) VALUES (NEW.account_id, NEW.status, NEW.carrier, 1)
      ON CONFLICT (account_id, status, carrier) DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER shipment_counts_delete AFTER DELETE ON shipments BEGIN
    UPDATE shipment_counts SET n = n - 1
      WHERE account_id = OLD.account_id AND status = OLD.status AND carrier = OLD.carrier;
  END;
  CREATE TRIGGER shipment_counts_update AFTER UPDATE OF status, carrier ON shipments
    WHEN OLD.status IS NOT NEW.status OR OLD.carrier IS NOT NEW.carrier BEGIN
    UPDATE shipment_counts SET n = n - 1
      WHERE account_id = OLD.account_id AND status = OLD.status AND carrier = OLD.carrier;
    INSERT INTO shipment_counts (account_id, status, carrier, n) VALUES (NEW.account_id, NEW.status, NEW.carrier, 1)
      ON CONFLICT (account_id, status, carrier) DO UPDATE SET n = n + 1;
  END;
  `,
  /* 7: smaller indexes, packed event bodies, a way to find finished jobs */ `
  -- Lists read newest first, and SQLite walks an ascending index backwards as fast as a descending
  -- one forwards. Built descending, every insert landed at the front of the index and split pages
  -- there, leaving them half empty; ascending, inserts append and pages fill. \`seq\` is the rowid,
  -- which ends every index already and still orders ties.
  DROP INDEX shipments_page;
  DROP INDEX shipments_page_by_status;
  DROP INDEX shipments_page_by_carrier;
  CREATE INDEX shipments_page ON shipments (account_id, created_at);
  CREATE INDEX shipments_page_by_status ON shipments (account_id, status, created_at);
  CREATE INDEX shipments_page_by_carrier ON shipments (account_id, carrier, created_at);
  DROP INDEX events_by_account;
  DROP INDEX events_by_type;
  CREATE INDEX events_by_account ON events (account_id);
  CREATE INDEX events_by_type ON events (account_id, type);

  -- The envelope packed (src/events/packing.ts: JSON's fixed fragments replaced by short codes), its
  -- first byte naming the format; \`body\` is then ''. Rows written before this migration keep their
  -- \`body\`.
  ALTER TABLE events ADD COLUMN packed BLOB;

  -- Finished jobs (done, failed, cancelled) by when they finished, so old ones can be deleted.
  CREATE INDEX jobs_finished ON jobs (account_id, finished_at) WHERE finished_at IS NOT NULL;
  `,
  /* 8: the index a deleted event's cascade needs */ `
  -- Deleting an event (an account reset deletes them all) looks for its delivery attempts; without
  -- this index that was a scan of every account's attempts for each event.
  CREATE INDEX webhook_attempts_by_event ON webhook_attempts (event_id);
  `,
  /* 9: webhook attempts are due work of their own; the delivery log names its event's type itself */ `
  -- A delivery attempt is the scheduler's due work as it stands (src/webhooks/delivery.ts reads the
  -- attempts due): the job that used to mirror each one, with a state of its own, is gone.
  DELETE FROM jobs WHERE kind = 'webhook.attempt';
  CREATE INDEX webhook_attempts_due ON webhook_attempts (account_id, scheduled_at) WHERE status = 'scheduled';

  -- The event's type, so that reading the delivery log needs no other module's table.
  ALTER TABLE webhook_attempts ADD COLUMN event_type TEXT NOT NULL DEFAULT '';
  UPDATE webhook_attempts SET event_type = (SELECT type FROM events WHERE events.id = webhook_attempts.event_id);
  `,
  /* 10: an attempt may fail because its destination is refused */ `
  -- A CHECK constraint cannot be altered: the table is rebuilt with the new error kind, its rows
  -- (and their seq, which orders the delivery log) copied as they are, and every index of
  -- migrations 4, 8 and 9 made again. No table references this one.
  CREATE TABLE webhook_attempts_new (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    event_id TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    attempt INTEGER NOT NULL,
    redelivery INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL CHECK (status IN ('scheduled', 'sending', 'succeeded', 'failed', 'cancelled')),
    scheduled_at INTEGER NOT NULL,
    sent_at INTEGER,
    response_status INTEGER,
    response_excerpt TEXT,
    duration_ms INTEGER,
    error TEXT CHECK (error IN ('timeout', 'connection', 'http', 'destination_not_allowed')),
    error_message TEXT,
    next_attempt_at INTEGER,
    event_type TEXT NOT NULL DEFAULT ''
  ) STRICT;
  -- The old table's high-water mark, so a new attempt never takes the seq of a deleted one.
  INSERT INTO sqlite_sequence (name, seq)
    SELECT 'webhook_attempts_new', seq FROM sqlite_sequence WHERE name = 'webhook_attempts';
  INSERT INTO webhook_attempts_new (seq, id, account_id, webhook_id, event_id, attempt, redelivery, status,
      scheduled_at, sent_at, response_status, response_excerpt, duration_ms, error, error_message,
      next_attempt_at, event_type)
    SELECT seq, id, account_id, webhook_id, event_id, attempt, redelivery, status,
      scheduled_at, sent_at, response_status, response_excerpt, duration_ms, error, error_message,
      next_attempt_at, event_type
    FROM webhook_attempts;
  DROP TABLE webhook_attempts;
  ALTER TABLE webhook_attempts_new RENAME TO webhook_attempts;
  CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, seq);
  CREATE INDEX webhook_attempts_by_status ON webhook_attempts (status);
  CREATE INDEX webhook_attempts_by_event ON webhook_attempts (event_id);
  CREATE INDEX webhook_attempts_due ON webhook_attempts (account_id, scheduled_at) WHERE status = 'scheduled';
  `,
  /* 11: probe deliveries, and the wall-clock time of each send */ `
  -- POST /_sandbox/webhooks/:id/probe sends a correctly signed delivery and a forged one: each is marked,
  -- so it is never retried, never fails its webhook and counts only toward the report's
  -- verifies_signatures. NULL for every other attempt.
  ALTER TABLE webhook_attempts ADD COLUMN probe TEXT CHECK (probe IN ('genuine', 'forged'));
  -- When the attempt went out by the wall clock (sent_at is the account's clock): the report's evidence
  -- gives both. NULL for attempts sent before this migration.
  ALTER TABLE webhook_attempts ADD COLUMN sent_wall_at INTEGER;
  `,
  /* 12: what the dashboard looks up: shipments by tracking number or reference, deliveries as sent */ `
  -- A search by tracking number or reference reads these, not every shipment of the account.
  CREATE INDEX shipments_by_tracking_number ON shipments (account_id, tracking_number);
  CREATE INDEX shipments_by_reference ON shipments (account_id, reference);

  -- The URL and signature each attempt was sent with: the webhook's URL and secret may change after.
  CREATE TABLE webhook_requests (
    attempt_id TEXT PRIMARY KEY REFERENCES webhook_attempts(id) ON DELETE CASCADE,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    signature TEXT NOT NULL
  ) STRICT;
  CREATE INDEX webhook_requests_by_account ON webhook_requests (account_id);
  `,
  /* 13: what labels' scenario steps are derived from */ `
  -- A label keeps only its next scenario step as a job (src/tracking/service.ts); the steps after it
  -- are derived when it runs from the label, the time its scenario started and one of these: the
  -- seed and the scenario (as JSON) they were planned with. Jobs written before this migration hold
  -- one step each and run as they are.
  CREATE TABLE tracking_plans (
    id INTEGER PRIMARY KEY,
    seed TEXT NOT NULL,
    scenario TEXT NOT NULL,
    UNIQUE (seed, scenario)
  ) STRICT;
  `,
  /* 14: each shipment's API JSON, kept with its row */ `
  -- A read sends \`body\` as it is and a list joins its rows' bodies (src/shipments/store.ts); the
  -- store rewrites it with every change. Filled here from the columns it replaces, as the old reads
  -- serialised them: JSON.stringify's shape and escapes, json() keeping the stored JSON's bytes, and
  -- the contract's timestamps (UTC, whole seconds, floored, never past 9999-12-31T23:59:59Z).
  ALTER TABLE shipments ADD COLUMN body TEXT NOT NULL DEFAULT '';
  UPDATE shipments SET body = json_object(
    'id', id,
    'status', status,
    'carrier', carrier,
    'service', service,
    'rate', json_object('amount', rate_amount, 'currency', rate_currency),
    'from', json(from_address),
    'to', json(to_address),
    'parcel', json(parcel),
    'reference', reference,
    'tracking_number', tracking_number,
    'label_id', label_id,
    'created_at', strftime('%Y-%m-%dT%H:%M:%SZ',
      (min(created_at, 253402300799000) - (min(created_at, 253402300799000) % 1000 + 1000) % 1000) / 1000,
      'unixepoch'),
    'cancelled_at', CASE WHEN cancelled_at IS NULL THEN NULL ELSE strftime('%Y-%m-%dT%H:%M:%SZ',
      (min(cancelled_at, 253402300799000) - (min(cancelled_at, 253402300799000) % 1000 + 1000) % 1000) / 1000,
      'unixepoch') END);
  -- Nothing filters on these: the JSON holds them.
  ALTER TABLE shipments DROP COLUMN service;
  ALTER TABLE shipments DROP COLUMN rate_amount;
  ALTER TABLE shipments DROP COLUMN rate_currency;
  ALTER TABLE shipments DROP COLUMN from_address;
  ALTER TABLE shipments DROP COLUMN to_address;
  ALTER TABLE shipments DROP COLUMN parcel;
  ALTER TABLE shipments DROP COLUMN label_id;
  `,
  /* 15: the tracking-number index holds labelled shipments only */ `
  -- A shipment has no tracking number until it is labelled, and a search by tracking number never
  -- looks for none: an entry for each new shipment was one write of every creation for nothing.
  DROP INDEX shipments_by_tracking_number;
  CREATE INDEX shipments_by_tracking_number ON shipments (account_id, tracking_number)
    WHERE tracking_number IS NOT NULL;
  `,
  /* 16: a small integer for each account, in the indexes of the tables that grow with it */ `
  -- Every index of shipments and events led with the account's 31-character id, repeated in each of
  -- their seven entries a shipment: 20 MiB of the 162 that 100,000 shipments took. Each account has a
  -- key of a byte or two here instead (src/db/account-keys.ts), given by a trigger as the account is
  -- made, so every account has one; a deleted account's key is never given to another.
  CREATE TABLE account_keys (
    key INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id TEXT NOT NULL UNIQUE REFERENCES accounts(id) ON DELETE CASCADE
  ) STRICT;
  INSERT INTO account_keys (account_id) SELECT id FROM accounts ORDER BY rowid;
  CREATE TRIGGER account_keys_insert AFTER INSERT ON accounts BEGIN
    INSERT INTO account_keys (account_id) VALUES (NEW.id);
  END;

  -- The rows keep their \`account_id\` (its foreign key deletes them with their account); the key
  -- beside it is what lists and searches look up. A row written without its key (by SQL that names
  -- only the id) gets it from a trigger, so that no row is ever missing from its account's lists.
  ALTER TABLE shipments ADD COLUMN account_key INTEGER;
  UPDATE shipments SET account_key = (SELECT key FROM account_keys k WHERE k.account_id = shipments.account_id);
  CREATE TRIGGER shipments_account_key AFTER INSERT ON shipments WHEN NEW.account_key IS NULL BEGIN
    UPDATE shipments SET account_key = (SELECT key FROM account_keys WHERE account_id = NEW.account_id)
      WHERE seq = NEW.seq;
  END;
  DROP INDEX shipments_page;
  DROP INDEX shipments_page_by_status;
  DROP INDEX shipments_page_by_carrier;
  DROP INDEX shipments_by_reference;
  DROP INDEX shipments_by_tracking_number;
  CREATE INDEX shipments_page ON shipments (account_key, created_at);
  CREATE INDEX shipments_page_by_status ON shipments (account_key, status, created_at);
  CREATE INDEX shipments_page_by_carrier ON shipments (account_key, carrier, created_at);
  CREATE INDEX shipments_by_reference ON shipments (account_key, reference);
  CREATE INDEX shipments_by_tracking_number ON shipments (account_key, tracking_number)
    WHERE tracking_number IS NOT NULL;

  ALTER TABLE events ADD COLUMN account_key INTEGER;
  UPDATE events SET account_key = (SELECT key FROM account_keys k WHERE k.account_id = events.account_id);
  CREATE TRIGGER events_account_key AFTER INSERT ON events WHEN NEW.account_key IS NULL BEGIN
    UPDATE events SET account_key = (SELECT key FROM account_keys WHERE account_id = NEW.account_id)
      WHERE seq = NEW.seq;
  END;
  DROP INDEX events_by_account;
  DROP INDEX events_by_type;
  CREATE INDEX events_by_account ON events (account_key);
  CREATE INDEX events_by_type ON events (account_key, type);

  -- From here a shipment's \`body\` may be stored packed (src/shipments/body-packing.ts), and an
  -- event's envelope without the id and time its row holds (format 2, src/events/packing.ts): a
  -- sandbox of schema 15 or older, which would read neither, refuses this database.
  `,
];
