import type { Logger } from 'pino';
import type { Sql } from '../db/sql.js';
import type { JournaledRequest } from './journal.js';
import { type JournalRow, requestsOf } from './rows.js';

/** How often the table is read for new rows while a stream is open on this process. */
export const POLL_MS = 250;
/** Rows a read takes at most (a row: an account's requests in a batch); a full one is followed by another at once. */
const POLL_ROWS = 500;

const SQL = {
  last: 'SELECT coalesce(max(seq), 0) FROM request_journal',
  since: `SELECT j.seq, k.account_id, j.requests
    FROM request_journal j JOIN account_keys k ON k.key = j.account_key
    WHERE k.account_id = ANY (@accounts) AND j.seq > @cursor
    ORDER BY j.seq LIMIT @limit`,
};

interface Watcher {
  /** The last row written before it started: it hears of later ones only. */
  from: number;
  listener: (request: JournaledRequest) => void;
}

/**
 * The request streams of one process over PostgreSQL: while any is open, the table is read every
 * POLL_MS for rows after the last one read (a short range of the primary key), of the accounts watched,
 * and each goes to its account's streams; while none is, nothing is read. A stream thus shows every
 * replica's requests, within the writer's flush interval and POLL_MS.
 *
 * Following by seq is exact because rows are committed in seq order (request_journal_append writes
 * one batch at a time). Polling was chosen over LISTEN/NOTIFY: it needs no connection held apart
 * from the pool, loses nothing while the database restarts (it reads on from its last row), and a
 * NOTIFY would serialise the commits of the whole server rather than of this schema's journal.
 */
export class JournalTail {
  private readonly watchers = new Map<string, Set<Watcher>>();
  private cursor = 0;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private failing = false;

  constructor(
    private readonly db: Sql,
    private readonly logger: Logger,
    /** Writes what this process has recorded so far. */
    private readonly flushOwn: () => Promise<void>,
  ) {}

  /** Starts following the account's new rows; resolves once following, with the function that stops it. */
  async watch(accountId: string, listener: (request: JournaledRequest) => void): Promise<() => void> {
    // Requests this process recorded before the stream opened are written first, and not the stream's.
    await this.flushOwn();
    const from = (await this.db.value<number>(SQL.last)) ?? 0;
    const watcher: Watcher = { from, listener };
    let watchers = this.watchers.get(accountId);
    if (!watchers) {
      watchers = new Set();
      this.watchers.set(accountId, watchers);
    }
    watchers.add(watcher);
    if (!this.timer) {
      this.cursor = Math.max(this.cursor, from);
      this.timer = setInterval(() => this.tick(), POLL_MS).unref();
    }
    return () => {
      watchers.delete(watcher);
      if (watchers.size === 0 && this.watchers.get(accountId) === watchers) this.watchers.delete(accountId);
      if (this.watchers.size === 0) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.watchers.clear();
    await this.polling;
  }

  private tick(): void {
    if (this.polling) return;
    this.polling = this.poll()
      .then(
        () => {
          if (this.failing) this.logger.info('the request streams read the journal again');
          this.failing = false;
        },
        (error: unknown) => {
          if (!this.failing) this.logger.warn({ err: error }, 'the request streams cannot read the journal');
          this.failing = true;
        },
      )
      .finally(() => {
        this.polling = undefined;
      });
  }

  private async poll(): Promise<void> {
    for (;;) {
      if (this.watchers.size === 0) return;
      const rows = await this.db.all<JournalRow & { account_id: string }>(SQL.since, {
        accounts: [...this.watchers.keys()],
        cursor: this.cursor,
        limit: POLL_ROWS,
      });
      for (const row of rows) {
        this.cursor = row.seq;
        const watchers = this.watchers.get(row.account_id);
        if (!watchers) continue;
        for (const { request } of requestsOf([row]))
          for (const watcher of watchers) if (row.seq > watcher.from) watcher.listener(request);
      }
      if (rows.length < POLL_ROWS) return;
    }
  }
}
