import { dialect, type Sql } from '../db/sql.js';
import type { Job } from './queue.js';

export type JobState = 'pending' | 'running' | 'done' | 'failed' | 'cancelled';

interface JobRow {
  seq: number;
  id: string;
  account_id: string;
  kind: string;
  subject: string;
  payload: string;
  due_at: number;
}

const COLUMNS = 'seq, id, account_id, kind, subject, payload, due_at';

/**
 * How far apart PostgreSQL numbers new jobs: a chain's later items take the places between its first
 * job and the next job made (see `JobQueue.startChain`), and PostgreSQL's sequence hands out numbers
 * to concurrent transactions, so places cannot be reserved by moving it as SQLite's counter is moved.
 * A chain is at most this long. (The jobs table's identity column counts by it.)
 */
export const CHAIN_STRIDE = 1024;

const SQL = {
  insert: `INSERT INTO jobs (id, account_id, kind, subject, payload, due_at, state, created_at)
    VALUES (@id, @accountId, @kind, @subject, @payload, @dueAt, 'pending', @createdAt) RETURNING seq`,
  insertAt: `INSERT INTO jobs (seq, id, account_id, kind, subject, payload, due_at, state, created_at)
    VALUES (@seq, @id, @accountId, @kind, @subject, @payload, @dueAt, 'pending', @createdAt)`,
  // AUTOINCREMENT numbers new rows from this high-water mark, so raising it keeps seqs free for later.
  reserve: "UPDATE sqlite_sequence SET seq = @last WHERE name = 'jobs' AND seq < @last",
  nextDue: `SELECT ${COLUMNS} FROM jobs
    WHERE state = 'pending' AND account_id = ? AND due_at <= ? ORDER BY due_at, seq LIMIT 1`,
  // Another replica's transaction that holds the row is running it: skip it rather than wait.
  claim: {
    sqlite: "SELECT seq FROM jobs WHERE seq = ? AND state = 'pending'",
    postgres: "SELECT seq FROM jobs WHERE seq = ? AND state = 'pending' FOR UPDATE SKIP LOCKED",
  },
  mark: 'UPDATE jobs SET state = @state, finished_at = @finishedAt, error = @error WHERE seq = @seq',
  cancelBySubject:
    "UPDATE jobs SET state = 'cancelled', finished_at = @at WHERE subject = @subject AND state = 'pending' AND kind = @kind",
  cancelById: "UPDATE jobs SET state = 'cancelled', finished_at = @at WHERE id = @id AND state = 'pending'",
  pendingBySubject: `SELECT ${COLUMNS} FROM jobs
    WHERE subject = ? AND kind = ? AND state = 'pending' ORDER BY due_at, seq`,
  accountsWithWork:
    "SELECT account_id, min(due_at) AS due_at FROM jobs WHERE state = 'pending' GROUP BY account_id",
  resetRunning: "UPDATE jobs SET state = 'pending' WHERE state = 'running'",
  deleteAccount: 'DELETE FROM jobs WHERE account_id = ?',
  upcoming: `SELECT ${COLUMNS} FROM jobs
    WHERE state = 'pending' AND account_id = ? ORDER BY due_at, seq LIMIT ?`,
  // Only finished jobs have a `finished_at`; the partial index jobs_finished holds just those.
  purge:
    'DELETE FROM jobs WHERE account_id = @accountId AND finished_at IS NOT NULL AND finished_at < @before',
  // The next account with finished jobs: one index probe per account, not a scan of the jobs.
  nextAccountWithFinished:
    'SELECT account_id FROM jobs WHERE finished_at IS NOT NULL AND account_id > ? ORDER BY account_id LIMIT 1',
};

/**
 * The jobs table's SQL. A job is `pending` until it runs, then `done`, `failed` or `cancelled`, with
 * the time it finished on its account's clock. Each method runs on the `q` it is given: the database,
 * or the transaction of the change that causes it.
 */
export class JobStore {
  /** Adds a pending job at the end of the queue; returns its seq. */
  async insert(tx: Sql, job: Omit<Job, 'seq'>, createdAt: number): Promise<number> {
    return ((await tx.get<{ seq: number }>(SQL.insert, this.params(job, createdAt))) as { seq: number }).seq;
  }

  /** Adds a pending job in a place reserved for it (`reserveThrough`). */
  async insertAt(tx: Sql, job: Job, createdAt: number): Promise<void> {
    await tx.run(SQL.insertAt, { ...this.params(job, createdAt), seq: job.seq });
  }

  /**
   * Keeps the seqs after `first` up to `last` free: jobs added from now on are numbered after them.
   * SQLite moves its counter; PostgreSQL's numbers are CHAIN_STRIDE apart already.
   */
  async reserveThrough(tx: Sql, first: number, last: number): Promise<void> {
    if (tx.engine === 'sqlite') await tx.run(SQL.reserve, { last });
    else if (last - first >= CHAIN_STRIDE)
      throw new Error(`a chain of ${last - first + 1} items is too long`);
  }

  /** The account's first pending job due at or before `until`. */
  async nextDue(q: Sql, accountId: string, until: number): Promise<Job | undefined> {
    const row = await q.get<JobRow>(SQL.nextDue, [accountId, until]);
    return row && toJob(row);
  }

  /**
   * Claims a pending job for the transaction `tx` that runs it: false when it is done already, or
   * another replica's transaction is running it.
   */
  async claim(tx: Sql, seq: number): Promise<boolean> {
    return (await tx.value(dialect(tx, SQL.claim), [seq])) !== undefined;
  }

  async mark(
    q: Sql,
    seq: number,
    state: JobState,
    finishedAt: number | null,
    error: string | null = null,
  ): Promise<void> {
    await q.run(SQL.mark, { seq, state, finishedAt, error });
  }

  async cancelBySubject(tx: Sql, kind: string, subject: string, at: number): Promise<void> {
    await tx.run(SQL.cancelBySubject, { kind, subject, at });
  }

  async cancelById(tx: Sql, id: string, at: number): Promise<void> {
    await tx.run(SQL.cancelById, { id, at });
  }

  async pendingBySubject<P>(q: Sql, kind: string, subject: string): Promise<Job<P>[]> {
    return (await q.all<JobRow>(SQL.pendingBySubject, [subject, kind])).map((row) => toJob<P>(row));
  }

  /** The first `limit` pending jobs of the account, soonest first (at equal times, by seq). */
  async upcoming(q: Sql, accountId: string, limit: number): Promise<Job[]> {
    return (await q.all<JobRow>(SQL.upcoming, [accountId, limit])).map((row) => toJob(row));
  }

  /** Every account with pending jobs, and its earliest due time. */
  async earliestDue(q: Sql): Promise<{ accountId: string; dueAt: number }[]> {
    return (await q.all<{ account_id: string; due_at: number }>(SQL.accountsWithWork)).map((row) => ({
      accountId: row.account_id,
      dueAt: Number(row.due_at),
    }));
  }

  /** Jobs a crash left `running` (by a sandbox before this one) are pending again. */
  async resetRunning(q: Sql): Promise<void> {
    await q.run(SQL.resetRunning);
  }

  /** Deletes the account's finished jobs that finished before `before`; returns how many. */
  deleteFinishedBefore(q: Sql, accountId: string, before: number): Promise<number> {
    return q.run(SQL.purge, { accountId, before });
  }

  /** The first account after `after` (in id order) that has finished jobs. */
  nextAccountWithFinished(q: Sql, after: string): Promise<string | undefined> {
    return q.value<string>(SQL.nextAccountWithFinished, [after]);
  }

  async deleteAccount(tx: Sql, accountId: string): Promise<void> {
    await tx.run(SQL.deleteAccount, [accountId]);
  }

  private params(job: Omit<Job, 'seq'>, createdAt: number) {
    return {
      id: job.id,
      accountId: job.accountId,
      kind: job.kind,
      subject: job.subject,
      payload: JSON.stringify(job.payload),
      dueAt: job.dueAt,
      createdAt,
    };
  }
}

function toJob<P>(row: JobRow): Job<P> {
  return {
    id: row.id,
    accountId: row.account_id,
    kind: row.kind,
    subject: row.subject,
    payload: JSON.parse(row.payload) as P,
    dueAt: row.due_at,
    seq: row.seq,
  };
}
