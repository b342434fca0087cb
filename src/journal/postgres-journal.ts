import type { Logger } from 'pino';
import { accountKeyOf } from '../db/account-keys.js';
import type { Sql } from '../db/sql.js';
import {
  ENTRIES_PER_ACCOUNT,
  type JournalEntry,
  type JournaledRequest,
  presentRequest,
  type RequestJournal,
  type RequestListener,
} from './journal.js';
import { JournalTail } from './tail.js';

/** How long a recorded request may wait in this process before it is written, with the others of that time. */
export const FLUSH_MS = 50;
/** Rows a batch writes at most (one statement). */
const BATCH_ROWS = 1000;
/**
 * Requests held while the database cannot be reached; past this the oldest make way. The requests of
 * an outage are answered 503 by the sandbox anyway.
 */
const MAX_BUFFERED = 10_000;
/**
 * Requests of an account that this process writes before it asks the integration report to take them
 * in (a fold), which also trims the account's journal: the rows an account has beyond its last 1,000
 * stay below this many for each replica.
 */
export const FOLD_EVERY = 500;

/** A journal row the integration report has not taken in yet. */
export interface UnfoldedRequest {
  seq: number;
  request: JournaledRequest;
}

/**
 * What the integration report's observations read of the journal over PostgreSQL, whose rows are also
 * the report's notes of requests (see journal/migrations.ts).
 */
export interface JournalNotes {
  /** Writes this process's buffered requests now; resolves once they are in the table. */
  flush(): Promise<void>;
  /**
   * The account's requests the report has not taken in. `settled`: the run of them, in the order they
   * were written, from the first on that were all answered before `settledBefore` (by when another
   * replica's of the same moments are written too); `newer`: the rest, read only `withNewer`. Each in
   * the order to take them in: by wall-clock answer time, then seq.
   */
  unfolded(
    tx: Sql,
    accountId: string,
    settledBefore: number,
    withNewer: boolean,
  ): Promise<{ settled: UnfoldedRequest[]; newer: UnfoldedRequest[] }>;
  /**
   * Notes that the report has taken in the account's requests up to `throughSeq`, and trims the
   * account's journal to its last 1,000 (only rows taken in go).
   */
  markFolded(tx: Sql, accountId: string, throughSeq: number): Promise<void>;
  /** Asks `fold` to take in the account's requests whenever this process has written FOLD_EVERY more of them. */
  foldWith(fold: (accountId: string) => Promise<unknown>): void;
}

const SQL = {
  append: 'SELECT request_journal_append(@accounts, @answered, @requests)',
  recent: `SELECT request FROM request_journal WHERE account_key = ${accountKeyOf('@accountId')}
    ORDER BY answered_wall_at DESC, seq DESC LIMIT @limit`,
  deleteAccount: `DELETE FROM request_journal WHERE account_key = ${accountKeyOf('@accountId')}`,
  deleteFolds: `DELETE FROM request_journal_folds WHERE account_key = ${accountKeyOf('@accountId')}`,
  // The seq the report reached, and the first row after it not yet settled (answered at or after
  // @settledBefore): a walk along the account's rows in the order written, from the point reached.
  unfoldedRange: `SELECT r.seq AS reached,
      (SELECT j.seq FROM request_journal j
        WHERE j.account_key = k.key AND j.seq > r.seq AND j.answered_wall_at >= @settledBefore
        ORDER BY j.seq LIMIT 1) AS unsettled
    FROM (SELECT key FROM account_keys WHERE account_id = @accountId) k,
    LATERAL (SELECT coalesce(
      (SELECT f.through_seq FROM request_journal_folds f WHERE f.account_key = k.key), 0) AS seq) r`,
  unfolded: `SELECT seq, request FROM request_journal
    WHERE account_key = ${accountKeyOf('@accountId')} AND seq > @after AND seq < @until ORDER BY seq`,
  markFolded: `INSERT INTO request_journal_folds (account_key, through_seq)
    SELECT key, @throughSeq FROM account_keys WHERE account_id = @accountId
    ON CONFLICT (account_key) DO UPDATE SET through_seq = excluded.through_seq`,
  planByIndex: 'SET LOCAL enable_bitmapscan = off',
  // Rows older than the account's 1,000th newest go, once the report has taken them in.
  trim: `DELETE FROM request_journal
    WHERE account_key = ${accountKeyOf('@accountId')} AND seq <= @throughSeq AND (answered_wall_at, seq) < (
      SELECT answered_wall_at, seq FROM request_journal WHERE account_key = ${accountKeyOf('@accountId')}
      ORDER BY answered_wall_at DESC, seq DESC OFFSET ${ENTRIES_PER_ACCOUNT - 1} LIMIT 1
    )`,
};

/**
 * The journal that replicas over one PostgreSQL database share: every request a row of
 * `request_journal`, so that any replica lists and streams every replica's requests.
 *
 * Writing a row is kept off the request's way: each process buffers what it records and writes it
 * every FLUSH_MS, in one statement a batch (and at close). Listing on the process flushes it first,
 * so a client reads its own requests at once; another replica's show within its flush interval.
 * Streams follow the table (tail.ts). The table keeps each account's last 1,000 rows, trimmed when
 * the integration report takes rows in.
 */
export class PostgresJournal implements RequestJournal, JournalNotes {
  private buffer: { accountId: string; request: JournaledRequest }[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** One write at a time, in the order recorded. */
  private writing: Promise<void> = Promise.resolve();
  private readonly listeners = new Set<RequestListener>();
  private readonly tail: JournalTail;
  /** Per account, the requests written since this process last asked for a fold. */
  private readonly sinceFold = new Map<string, number>();
  private fold: ((accountId: string) => Promise<unknown>) | undefined;
  /** The folds under way, by account: one at a time each, since a second would only wait for the first. */
  private readonly folds = new Map<string, Promise<unknown>>();
  private dropped = 0;
  private closed = false;

  constructor(
    private readonly db: Sql,
    private readonly logger: Logger,
  ) {
    this.tail = new JournalTail(db, logger, () => this.flush());
  }

  record(accountId: string, request: JournaledRequest): void {
    for (const listener of this.listeners) listener(accountId, request);
    this.buffer.push({ accountId, request });
    if (this.buffer.length > MAX_BUFFERED) {
      this.buffer.shift();
      this.dropped += 1;
    }
    if (this.closed) void this.flush().catch(() => undefined);
    else this.timer ??= setTimeout(() => this.flushLater(), FLUSH_MS).unref();
  }

  observe(listener: RequestListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  async recent(accountId: string, limit: number): Promise<JournalEntry[]> {
    await this.flush();
    const rows = await this.db.column<string>(SQL.recent, { accountId, limit });
    return rows.map((row) => presentRequest(JSON.parse(row) as JournaledRequest));
  }

  watch(accountId: string, listener: (request: JournaledRequest) => void): Promise<() => void> {
    return this.tail.watch(accountId, listener);
  }

  async deleteAccount(tx: Sql, accountId: string): Promise<void> {
    this.buffer = this.buffer.filter((entry) => entry.accountId !== accountId);
    this.sinceFold.delete(accountId);
    await tx.run(SQL.deleteAccount, { accountId });
    await tx.run(SQL.deleteFolds, { accountId });
  }

  flush(): Promise<void> {
    this.writing = this.writing.catch(() => undefined).then(() => this.write());
    return this.writing;
  }

  async unfolded(
    tx: Sql,
    accountId: string,
    settledBefore: number,
    withNewer: boolean,
  ): Promise<{ settled: UnfoldedRequest[]; newer: UnfoldedRequest[] }> {
    const range = await tx.get<{ reached: number; unsettled: number | null }>(SQL.unfoldedRange, {
      accountId,
      settledBefore,
    });
    const settled: UnfoldedRequest[] = [];
    const newer: UnfoldedRequest[] = [];
    if (!range) return { settled, newer };
    const firstUnsettled = range.unsettled ?? Number.MAX_SAFE_INTEGER;
    const rows = await tx.all<{ seq: number; request: string }>(SQL.unfolded, {
      accountId,
      after: range.reached,
      until: withNewer ? Number.MAX_SAFE_INTEGER : firstUnsettled,
    });
    for (const row of rows) {
      const unfolded = { seq: row.seq, request: JSON.parse(row.request) as JournaledRequest };
      (row.seq < firstUnsettled ? settled : newer).push(unfolded);
    }
    return { settled: settled.sort(inAnswerOrder), newer: newer.sort(inAnswerOrder) };
  }

  async markFolded(tx: Sql, accountId: string, throughSeq: number): Promise<void> {
    await tx.run(SQL.markFolded, { accountId, throughSeq });
    // The trim's bound is the 1,000th newest row: a short walk back along the account's index. A
    // table this quick to change has statistics that lag far behind it, and with them PostgreSQL would
    // rather gather all the account's rows (a second's requests under load) and sort them each time.
    await tx.run(SQL.planByIndex);
    await tx.run(SQL.trim, { accountId, throughSeq });
  }

  foldWith(fold: (accountId: string) => Promise<unknown>): void {
    this.fold = fold;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.tail.close();
    await this.flush().catch((error: unknown) =>
      this.logger.warn({ err: error }, 'the last requests could not be written to the journal'),
    );
    await Promise.all(this.folds.values());
  }

  private flushLater(): void {
    this.timer = undefined;
    this.flush().catch((error: unknown) => {
      this.logger.warn({ err: error }, 'requests could not be written to the journal; trying again');
      if (!this.closed) this.timer ??= setTimeout(() => this.flushLater(), FLUSH_MS * 20).unref();
    });
  }

  /**
   * Writes what was buffered when it was called, and no more: under load, following what arrives
   * meanwhile would write a few rows a round trip, back to back, instead of FLUSH_MS's worth at once.
   */
  private async write(): Promise<void> {
    for (let left = this.buffer.length; left > 0; left -= BATCH_ROWS) {
      const batch = this.buffer.splice(0, Math.min(left, BATCH_ROWS));
      try {
        await this.db.run(SQL.append, {
          accounts: batch.map((entry) => entry.accountId).join('\n'),
          answered: batch.map((entry) => entry.request.answeredWallAt).join(','),
          requests: batch.map((entry) => JSON.stringify(entry.request)).join('\n'),
        });
      } catch (error) {
        // Kept for the next try, ahead of what came since, within the bound.
        const kept = [...batch, ...this.buffer];
        this.dropped += Math.max(0, kept.length - MAX_BUFFERED);
        this.buffer = kept.slice(-MAX_BUFFERED);
        throw error;
      }
      if (this.dropped > 0) {
        this.logger.warn(
          { dropped: this.dropped },
          'requests were left out of the journal while it could not be written',
        );
        this.dropped = 0;
      }
      this.countTowardsFolds(batch);
    }
  }

  private countTowardsFolds(batch: readonly { accountId: string }[]): void {
    const fold = this.fold;
    if (!fold) return;
    for (const { accountId } of batch) {
      const count = (this.sinceFold.get(accountId) ?? 0) + 1;
      if (count < FOLD_EVERY) {
        this.sinceFold.set(accountId, count);
        continue;
      }
      this.sinceFold.delete(accountId);
      if (this.folds.has(accountId)) continue;
      const folding = fold(accountId)
        .catch((error: unknown) =>
          this.logger.warn(
            { err: error, account: accountId },
            "the report could not take in the account's requests",
          ),
        )
        .finally(() => this.folds.delete(accountId));
      this.folds.set(accountId, folding);
    }
  }
}

/** By wall-clock answer time, then seq: the order the report takes requests in. */
const inAnswerOrder = (a: UnfoldedRequest, b: UnfoldedRequest) =>
  a.request.answeredWallAt - b.request.answeredWallAt || a.seq - b.seq;
