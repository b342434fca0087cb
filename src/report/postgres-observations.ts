import type { Logger } from 'pino';
import { accountKeyOf } from '../db/account-keys.js';
import type { Sql } from '../db/sql.js';
import type { JournalNotes } from '../journal/postgres-journal.js';
import type { LabelUrlFetch } from '../labels/service.js';
import {
  AccountObservations,
  type LabelUrlNote,
  noteLabelUrl,
  noteRequest,
  type Observations,
  observationsFromJson,
  observationsToJson,
} from './observations.js';

/**
 * How old a note must be (by the wall clock of the replica reading it) before a fold takes it in for
 * good. Each replica writes its notes within its flush interval (50 ms), so by then another replica's
 * notes of the same moment are in too, and are taken in in the order they were answered: a 429 answered
 * by one replica and a retry answered just after by another are judged in that order. Newer notes are
 * read on top of the folded state for each report, and folded by a later fold.
 */
export const SETTLE_MS = 1000;

/**
 * Label URL fetches of an account that this process writes before it folds them in, so that an
 * account whose report nobody reads keeps a bounded backlog.
 */
const FOLD_EVERY_FETCHES = 500;

const SQL = {
  noteFetch: `INSERT INTO report_label_fetches (account_key, wall_at, note)
    SELECT key, @wallAt, @note FROM account_keys WHERE account_id = @accountId`,
  ensureState: `INSERT INTO report_observations (account_key)
    SELECT key FROM account_keys WHERE account_id = @accountId ON CONFLICT (account_key) DO NOTHING`,
  lockState: `SELECT state, through_wall_at FROM report_observations
    WHERE account_key = ${accountKeyOf('@accountId')} FOR UPDATE`,
  fetches: `SELECT seq, note FROM report_label_fetches WHERE account_key = ${accountKeyOf('@accountId')}
    ORDER BY wall_at, seq`,
  fetchesBefore: `SELECT seq, note FROM report_label_fetches WHERE account_key = ${accountKeyOf('@accountId')}
    AND wall_at < @wallBefore ORDER BY wall_at, seq`,
  deleteFetches: 'DELETE FROM report_label_fetches WHERE seq = ANY (@seqs)',
  saveState: `UPDATE report_observations SET state = @state, through_wall_at = @through
    WHERE account_key = ${accountKeyOf('@accountId')}`,
  deleteState: `DELETE FROM report_observations WHERE account_key = ${accountKeyOf('@accountId')}`,
  deleteAccountFetches: `DELETE FROM report_label_fetches WHERE account_key = ${accountKeyOf('@accountId')}`,
};

/**
 * The observations that replicas over one PostgreSQL database share. What feeds them is rows: the
 * journal's (every replica's requests) and `report_label_fetches` (every replica's label URL
 * fetches). A fold takes an account's rows not yet taken in through the same state machine as one
 * sandbox's memory, in the order of their wall-clock times then seq, into the account's state row.
 * Journal rows stay for the journal, and the seq up to which they were taken in is noted; fetches go.
 *
 * Only notes that have settled (SETTLE_MS) are folded for good; a report reads the newer ones on top.
 * A fold runs when the report is read, on whichever replica, and whenever a replica has written
 * many of an account's rows since its last fold, so the backlog stays bounded. It holds the state
 * row's lock (FOR UPDATE) throughout, so two folds of an account never interleave: the second reads
 * what the first left. Journal rows are committed in seq order, and a fold takes them in for good only
 * up to the first one not settled: a row that another replica wrote late (answered before rows
 * already taken in) has a later seq, and is taken in by the next fold, after them.
 */
export class PostgresObservations implements Observations {
  /** Label fetches being written, awaited before a fold on this process so it sees them. */
  private readonly writing = new Set<Promise<unknown>>();
  private readonly fetchesSinceFold = new Map<string, number>();
  private readonly folds = new Set<Promise<unknown>>();

  constructor(
    private readonly db: Sql,
    private readonly journal: JournalNotes,
    private readonly logger: Logger,
    private readonly realNow: () => number,
  ) {
    journal.foldWith((accountId) => this.fold(accountId, false));
  }

  of(accountId: string): Promise<AccountObservations> {
    return this.fold(accountId);
  }

  noteLabelUrl(fetch: LabelUrlFetch): void {
    const note: LabelUrlNote = { ...fetch, wallAt: this.realNow() };
    const { accountId } = fetch;
    const written = this.db
      .run(SQL.noteFetch, { accountId, wallAt: note.wallAt, note: JSON.stringify(note) })
      .then(() => {
        const count = (this.fetchesSinceFold.get(accountId) ?? 0) + 1;
        this.fetchesSinceFold.set(accountId, count);
        if (count >= FOLD_EVERY_FETCHES) this.foldLater(accountId);
      })
      .catch((error: unknown) =>
        this.logger.warn(
          { err: error, account: accountId },
          'a label URL fetch could not be noted for the report',
        ),
      )
      .finally(() => this.writing.delete(written));
    this.writing.add(written);
  }

  /** Folds the account in the background (its backlog grew), once the write that asked for it is done. */
  private foldLater(accountId: string): void {
    const folding = Promise.resolve()
      .then(() => this.fold(accountId, false))
      .catch((error: unknown) =>
        this.logger.warn(
          { err: error, account: accountId },
          "the report could not take in the account's notes",
        ),
      )
      .finally(() => this.folds.delete(folding));
    this.folds.add(folding);
  }

  async deleteAccount(tx: Sql, accountId: string): Promise<void> {
    this.fetchesSinceFold.delete(accountId);
    await tx.run(SQL.deleteState, { accountId });
    await tx.run(SQL.deleteAccountFetches, { accountId });
  }

  /**
   * Takes the account's settled notes in for good, and answers its observations with the newer
   * notes read on top (see SETTLE_MS). A fold in the background (`withNewer` false) reads only the
   * settled notes: under load the newer ones are many (a second's requests), and reading them all on
   * every fold cost more than the requests themselves.
   */
  async fold(accountId: string, withNewer = true): Promise<AccountObservations> {
    // What this process has recorded so far is in the tables first: a client sees its own requests. A
    // fold in the background takes only settled notes, written long since.
    if (withNewer) await Promise.all([this.journal.flush(), ...this.writing]);
    this.fetchesSinceFold.delete(accountId);
    const settledBefore = this.realNow() - SETTLE_MS;
    return this.db.transaction(async (tx) => {
      await tx.run(SQL.ensureState, { accountId });
      const state = await tx.get<{ state: string | null; through_wall_at: number }>(SQL.lockState, {
        accountId,
      });
      if (!state) return new AccountObservations();
      const account =
        state.state === null ? new AccountObservations() : observationsFromJson(JSON.parse(state.state));

      const requests = await this.journal.unfolded(tx, accountId, settledBefore, withNewer);
      const fetches = (
        await tx.all<{ seq: number; note: string }>(withNewer ? SQL.fetches : SQL.fetchesBefore, {
          accountId,
          wallBefore: settledBefore,
        })
      ).map((row) => ({
        seq: row.seq,
        note: JSON.parse(row.note) as LabelUrlNote,
      }));
      const settledRequests = requests.settled;
      const settledFetches = fetches.filter(({ note }) => note.wallAt < settledBefore);

      if (settledRequests.length > 0 || settledFetches.length > 0) {
        let through = state.through_wall_at;
        for (const { request } of settledRequests) {
          noteRequest(account, request);
          through = Math.max(through, request.answeredWallAt);
        }
        for (const { note } of settledFetches) {
          noteLabelUrl(account, note);
          through = Math.max(through, note.wallAt);
        }
        await tx.run(SQL.saveState, {
          accountId,
          state: JSON.stringify(observationsToJson(account)),
          through,
        });
        const throughSeq = settledRequests.reduce((last, row) => Math.max(last, row.seq), 0);
        if (throughSeq > 0) await this.journal.markFolded(tx, accountId, throughSeq);
        if (settledFetches.length > 0)
          await tx.run(SQL.deleteFetches, { seqs: settledFetches.map((row) => row.seq) });
      }
      for (const { request } of requests.newer) noteRequest(account, request);
      for (const { note } of fetches.slice(settledFetches.length)) noteLabelUrl(account, note);
      return account;
    });
  }

  /** Waits for the label fetches being noted and the folds under way (the database is closed after this). */
  async close(): Promise<void> {
    await Promise.all(this.writing);
    await Promise.all(this.folds);
  }
}
