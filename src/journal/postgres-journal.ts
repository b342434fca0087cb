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
import { type JournalRow, type RowRequest, requestsOf } from './rows.js';
import { JournalTail } from './tail.js';

/** How long a recorded request may wait in this process before it is written, with the others of that time. */
export const FLUSH_MS = 50;
/** Requests a batch writes at most (one statement). */
const BATCH_REQUESTS = 1000;
/** Parts the accounts' groups of entries in a batch's text: a JSON text never holds it raw. */
const GROUP_SEPARATOR = '\x1e';
/**
 * Requests held while the database cannot be reached; past this the oldest make way. The requests of
 * an outage are answered 503 by the sandbox anyway.
 */
const MAX_BUFFERED = 10_000;
/**
 * Requests of an account that this process writes before it asks the integration report to take them
 * in (a fold), which also trims the account's journal: the requests an account has beyond its last
 * 1,000 stay below about this many for each replica.
 */
export const FOLD_EVERY = 500;

/**
 * What the integration report's observations read of the journal over PostgreSQL, whose rows are also
 * the report's notes of requests (see journal/migrations.ts).
 */
export interface JournalNotes {
  /** Writes this process's buffered requests now; resolves once they are in the table. */
  flush(): Promise<void>;
  /**
   * The account's requests the report has not taken in. `settled`: those of the run of rows, in the
   * order they were written, from the first on whose requests were all answered before `settledBefore`
   * (by when another replica's of the same moments are written too); `newer`: the rest, read only
   * `withNewer`. Each in the order to take them in: by wall-clock answer time, then as written.
   */
  unfolded(
    tx: Sql,
    accountId: string,
    settledBefore: number,
    withNewer: boolean,
  ): Promise<{ settled: RowRequest[]; newer: RowRequest[] }>;
  /**
   * Notes that the report has taken in the account's requests up to `throughSeq`, and trims the
   * account's journal to its last 1,000 (only rows taken in go).
   */
  markFolded(tx: Sql, accountId: string, throughSeq: number): Promise<void>;
  /** Asks `fold` to take in the account's requests whenever this process has written FOLD_EVERY more of them. */
  foldWith(fold: (accountId: string) => Promise<unknown>): void;
}

/**
 * The seqs of the account's rows that hold its `limit` newest requests: the newest rows by their last
 * answer, enough to hold `limit` requests, and every row whose last answer is not older than the first
 * of theirs (another replica's batch of the same moments may hold newer requests than they do).
 */
const newestRows = (limit: string) => `
  WITH row_by_row AS (
    SELECT seq, first_answered_wall_at, last_answered_wall_at,
      sum(entries) OVER (ORDER BY last_answered_wall_at DESC, seq DESC) - entries AS newer_requests
    FROM request_journal WHERE account_key = ${accountKeyOf('@accountId')}
  )
  SELECT seq FROM row_by_row WHERE last_answered_wall_at >= (
    SELECT min(first_answered_wall_at) FROM row_by_row WHERE newer_requests < ${limit}
  )`;

const SQL = {
  append: 'SELECT request_journal_append(@accounts, @first, @last, @entries, @requests)',
  // The account's key as well as the seqs: without it PostgreSQL may read every account's rows to
  // find the few seqs (a hash join over the whole table).
  recent: `SELECT seq, requests FROM request_journal
    WHERE account_key = ${accountKeyOf('@accountId')} AND seq IN (${newestRows('@limit')}) ORDER BY seq`,
  deleteAccount: `DELETE FROM request_journal WHERE account_key = ${accountKeyOf('@accountId')}`,
  deleteFolds: `DELETE FROM request_journal_folds WHERE account_key = ${accountKeyOf('@accountId')}`,
  // The seq the report reached, and the first row after it not yet settled (answered at or after
  // @settledBefore): a walk along the account's rows in the order written, from the point reached.
  // And the account's last row as this statement sees it: the rows read next, in a statement of its
  // own, may hold some written since, which were not looked at here.
  unfoldedRange: `SELECT r.seq AS reached,
      (SELECT j.seq FROM request_journal j
        WHERE j.account_key = k.key AND j.seq > r.seq AND j.last_answered_wall_at >= @settledBefore
        ORDER BY j.seq LIMIT 1) AS unsettled,
      (SELECT max(j.seq) FROM request_journal j WHERE j.account_key = k.key) AS last
    FROM (SELECT key FROM account_keys WHERE account_id = @accountId) k,
    LATERAL (SELECT coalesce(
      (SELECT f.through_seq FROM request_journal_folds f WHERE f.account_key = k.key), 0) AS seq) r`,
  unfolded: `SELECT seq, requests FROM request_journal
    WHERE account_key = ${accountKeyOf('@accountId')} AND seq > @after AND seq < @until ORDER BY seq`,
  markFolded: `INSERT INTO request_journal_folds (account_key, through_seq)
    SELECT key, @throughSeq FROM account_keys WHERE account_id = @accountId
    ON CONFLICT (account_key) DO UPDATE SET through_seq = excluded.through_seq`,
  // Rows that hold none of the account's 1,000 newest requests go, once the report has taken them in.
  trim: `DELETE FROM request_journal
    WHERE account_key = ${accountKeyOf('@accountId')} AND seq <= @throughSeq
      AND seq NOT IN (${newestRows(String(ENTRIES_PER_ACCOUNT))})`,
};

/**
 * The journal that replicas over one PostgreSQL database share: every request in a row of
 * `request_journal`, so that any replica lists and streams every replica's requests.
 *
 * Writing is kept off the request's way: each process buffers what it records and writes it every
 * FLUSH_MS, in one statement a batch (and at close), a row for each account in the batch. Listing on
 * the process flushes it first, so a client reads its own requests at once; another replica's show
 * within its flush interval. Streams follow the table (tail.ts). The table keeps the rows that hold
 * each account's last 1,000 requests, trimmed when the integration report takes rows in.
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
    const rows = await this.db.all<JournalRow>(SQL.recent, { accountId, limit });
    // Newest first: the rows' requests from the last written back, then by answer time.
    return requestsOf(rows)
      .reverse()
      .sort((a, b) => inAnswerOrder(b, a))
      .slice(0, limit)
      .map(({ request }) => presentRequest(request));
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
  ): Promise<{ settled: RowRequest[]; newer: RowRequest[] }> {
    const range = await tx.get<{ reached: number; unsettled: number | null; last: number | null }>(
      SQL.unfoldedRange,
      { accountId, settledBefore },
    );
    const settled: RowRequest[] = [];
    const newer: RowRequest[] = [];
    if (!range) return { settled, newer };
    // A row written after the range was read is not known to have settled.
    const firstUnsettled = range.unsettled ?? Math.max(range.last ?? 0, range.reached) + 1;
    const rows = await tx.all<JournalRow>(SQL.unfolded, {
      accountId,
      after: range.reached,
      until: withNewer ? Number.MAX_SAFE_INTEGER : firstUnsettled,
    });
    for (const unfolded of requestsOf(rows)) (unfolded.seq < firstUnsettled ? settled : newer).push(unfolded);
    return { settled: settled.sort(inAnswerOrder), newer: newer.sort(inAnswerOrder) };
  }

  async markFolded(tx: Sql, accountId: string, throughSeq: number): Promise<void> {
    await tx.run(SQL.markFolded, { accountId, throughSeq });
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
    for (let left = this.buffer.length; left > 0; left -= BATCH_REQUESTS) {
      const batch = this.buffer.splice(0, Math.min(left, BATCH_REQUESTS));
      try {
        await this.db.run(SQL.append, appendParameters(batch));
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

/**
 * By wall-clock answer time, then seq: the order the report takes requests in (a sort is stable, so
 * a row's requests stay in the order written).
 */
const inAnswerOrder = (a: RowRequest, b: RowRequest) =>
  a.request.answeredWallAt - b.request.answeredWallAt || a.seq - b.seq;

/** A batch as request_journal_append takes it: a group of entries an account, in the order first recorded. */
function appendParameters(batch: readonly { accountId: string; request: JournaledRequest }[]) {
  const groups = new Map<string, { first: number; last: number; lines: string[] }>();
  for (const { accountId, request } of batch) {
    const answered = request.answeredWallAt;
    const group = groups.get(accountId);
    if (group) {
      group.first = Math.min(group.first, answered);
      group.last = Math.max(group.last, answered);
      group.lines.push(JSON.stringify(request));
    } else groups.set(accountId, { first: answered, last: answered, lines: [JSON.stringify(request)] });
  }
  const all = [...groups.values()];
  return {
    accounts: [...groups.keys()].join('\n'),
    first: all.map((group) => group.first).join(','),
    last: all.map((group) => group.last).join(','),
    entries: all.map((group) => group.lines.length).join(','),
    requests: all.map((group) => group.lines.join('\n')).join(GROUP_SEPARATOR),
  };
}
