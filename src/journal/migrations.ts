import type { Migrations } from '../db/migrations.js';

/**
 * One sandbox over SQLite keeps its journal in memory: no tables. Replicas over PostgreSQL share it
 * in `request_journal` (postgres-journal.ts): a row for each account in each batch a replica writes,
 * its entries as lines of JSON (sent as stored, never queried inside). The journal's rows are also the report's notes of requests, so that no
 * request is written twice: `request_journal_folds` holds, for each account, the seq up to which the
 * integration report has taken them in.
 */
export const JOURNAL_MIGRATIONS: Migrations = {
  sqlite: [],
  postgres: [
    `
    CREATE TABLE request_journal (
      -- the order the rows were written in, which is the order they were committed in (see below)
      seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      account_key BIGINT NOT NULL REFERENCES account_keys(key) ON DELETE CASCADE,
      -- when the request was answered, by the wall clock of the replica that answered it
      answered_wall_at BIGINT NOT NULL,
      request TEXT NOT NULL,
      folded BOOLEAN NOT NULL DEFAULT false
    );
    -- An account's entries in the order they were answered, as one sandbox lists them (the replicas'
    -- wall clocks are taken to agree); seq, the order they were written, breaks ties. A stream
    -- follows new rows by seq alone, a short range of the primary key.
    CREATE INDEX request_journal_by_account ON request_journal (account_key, answered_wall_at, seq);
    CREATE INDEX request_journal_unfolded ON request_journal (account_key, answered_wall_at, seq)
      WHERE NOT folded;

    -- Appends a replica's batch of requests (accounts by id, in the order they were recorded). One
    -- batch at a time, across replicas: the transaction-scoped lock makes the rows' seq order their
    -- commit order, so that a reader following new rows by seq never passes one still uncommitted.
    -- A journal row is not worth a disk flush: a crash of the database may lose the last ones.
    CREATE FUNCTION request_journal_append(p_accounts TEXT[], p_answered BIGINT[], p_requests TEXT[])
    RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM set_config('synchronous_commit', 'off', true);
      PERFORM pg_advisory_xact_lock(hashtext('shipping-sandbox request_journal ' || current_schema()));
      INSERT INTO request_journal (account_key, answered_wall_at, request)
        SELECT k.key, e.answered, e.request
          FROM unnest(p_accounts, p_answered, p_requests) WITH ORDINALITY AS e(account_id, answered, request, n)
          JOIN account_keys k ON k.account_id = e.account_id
         ORDER BY e.n;
    END $$;
    `,
    // The batch as three texts, one line (or number) a request, split where it lands: a JSON text has
    // no raw line break. As arrays, each request's quotes were escaped into an array literal.
    `
    DROP FUNCTION request_journal_append(TEXT[], BIGINT[], TEXT[]);
    CREATE FUNCTION request_journal_append(p_accounts TEXT, p_answered TEXT, p_requests TEXT)
    RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM set_config('synchronous_commit', 'off', true);
      PERFORM pg_advisory_xact_lock(hashtext('shipping-sandbox request_journal ' || current_schema()));
      INSERT INTO request_journal (account_key, answered_wall_at, request)
        SELECT k.key, e.answered, e.request
          FROM unnest(
                 string_to_array(p_accounts, E'\\n'),
                 string_to_array(p_answered, ',')::BIGINT[],
                 string_to_array(p_requests, E'\\n')
               ) WITH ORDINALITY AS e(account_id, answered, request, n)
          JOIN account_keys k ON k.account_id = e.account_id
         ORDER BY e.n;
    END $$;
    `,
    // The report's progress as one seq an account rather than a flag a row: marking each row taken in
    // wrote every row twice more (a new version, then its removal) for the vacuum to clear.
    `
    CREATE TABLE request_journal_folds (
      account_key BIGINT PRIMARY KEY REFERENCES account_keys(key) ON DELETE CASCADE,
      -- every row of the account up to this seq has been taken in, and none after it
      through_seq BIGINT NOT NULL
    );
    -- What was marked becomes each account's point reached. A row written late below it and not yet
    -- taken in (a replica's last second's, at most) is left out of the report.
    INSERT INTO request_journal_folds (account_key, through_seq)
      SELECT account_key, max(seq) FROM request_journal WHERE folded GROUP BY account_key;
    DROP INDEX request_journal_unfolded;
    ALTER TABLE request_journal DROP COLUMN folded;
    -- An account's rows in the order they were written: what the report has not taken in is a range.
    CREATE INDEX request_journal_by_seq ON request_journal (account_key, seq);
    `,
    // A row an account a batch, rather than a row a request: a row cost PostgreSQL about as much to
    // write and to index as a read by id cost the sandbox. `requests` holds the batch's entries one
    // line each, in the order recorded; the row is placed by the first and last of their answer times.
    // A batch's text runs to hundreds of kilobytes under load: stored apart and not compressed, which
    // cost more CPU than the bytes it saved.
    `
    ALTER TABLE request_journal RENAME COLUMN request TO requests;
    ALTER TABLE request_journal RENAME COLUMN answered_wall_at TO last_answered_wall_at;
    ALTER TABLE request_journal ADD COLUMN first_answered_wall_at BIGINT;
    UPDATE request_journal SET first_answered_wall_at = last_answered_wall_at;
    ALTER TABLE request_journal ALTER COLUMN first_answered_wall_at SET NOT NULL;
    ALTER TABLE request_journal ADD COLUMN entries INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE request_journal ALTER COLUMN entries DROP DEFAULT;
    ALTER TABLE request_journal ALTER COLUMN requests SET STORAGE EXTERNAL;

    -- A replica's batch: for each account (by id, one line each, in the order of their first request),
    -- its entries' first and last answer times and their count (comma-separated), and its entries (the
    -- accounts' groups parted by a record separator, which a JSON text never holds raw).
    DROP FUNCTION request_journal_append(TEXT, TEXT, TEXT);
    CREATE FUNCTION request_journal_append(
      p_accounts TEXT, p_first TEXT, p_last TEXT, p_entries TEXT, p_requests TEXT
    ) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM set_config('synchronous_commit', 'off', true);
      PERFORM pg_advisory_xact_lock(hashtext('shipping-sandbox request_journal ' || current_schema()));
      INSERT INTO request_journal (account_key, first_answered_wall_at, last_answered_wall_at, entries, requests)
        SELECT k.key, b.first, b.last, b.entries, b.requests
          FROM unnest(
                 string_to_array(p_accounts, E'\\n'),
                 string_to_array(p_first, ',')::BIGINT[],
                 string_to_array(p_last, ',')::BIGINT[],
                 string_to_array(p_entries, ',')::INTEGER[],
                 string_to_array(p_requests, E'\\x1e')
               ) WITH ORDINALITY AS b(account_id, first, last, entries, requests, n)
          JOIN account_keys k ON k.account_id = b.account_id
         ORDER BY b.n;
    END $$;
    `,
  ],
};
