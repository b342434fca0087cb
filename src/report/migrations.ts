import type { Migrations } from '../db/migrations.js';

/**
 * One sandbox over SQLite keeps the report's observations in memory: no tables. Replicas over
 * PostgreSQL keep them in the database (postgres-observations.ts): the notes they take in are the
 * journal's rows (request_journal) and the label URL fetches below, folded into each account's
 * state row, a JSON document of its bounded observations.
 */
export const REPORT_MIGRATIONS: Migrations = {
  sqlite: [],
  postgres: [
    `
    -- Fetches of label URLs not yet taken into their account's observations; a fold deletes them.
    CREATE TABLE report_label_fetches (
      seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      account_key BIGINT NOT NULL REFERENCES account_keys(key) ON DELETE CASCADE,
      -- by the wall clock of the replica that served the fetch
      wall_at BIGINT NOT NULL,
      note TEXT NOT NULL
    );
    CREATE INDEX report_label_fetches_by_account ON report_label_fetches (account_key, wall_at, seq);

    -- Each account's observations as of its last fold; a fold locks the row, so two never interleave.
    CREATE TABLE report_observations (
      account_key BIGINT PRIMARY KEY REFERENCES account_keys(key) ON DELETE CASCADE,
      state TEXT,
      -- the latest wall-clock time (answer or fetch) of the notes taken in
      through_wall_at BIGINT NOT NULL DEFAULT 0
    );
    `,
  ],
};
