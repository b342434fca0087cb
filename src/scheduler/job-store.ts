import type { Db } from '../db/database.js';
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
 * The jobs table's SQL. A job is `pending` until it runs; an asynchronous one is `running` while it
 * works; then `done`, `failed` or `cancelled`, with the time it finished on its account's clock.
 */
export class JobStore {
  private readonly insertStatement;
  private readonly insertAtStatement;
  private readonly reserveStatement;
  private readonly nextDueStatement;
  private readonly markStatement;
  private readonly cancelBySubjectStatement;
  private readonly cancelByIdStatement;
  private readonly pendingBySubjectStatement;
  private readonly accountsWithWorkStatement;
  private readonly resetRunningStatement;
  private readonly purgeStatement;
  private readonly nextAccountWithFinishedStatement;
  private readonly deleteAccountStatement;
  private readonly upcomingStatement;

  constructor(db: Db) {
    this.insertStatement = db.prepare(
      `INSERT INTO jobs (id, account_id, kind, subject, payload, due_at, state, created_at)
       VALUES (@id, @accountId, @kind, @subject, @payload, @dueAt, 'pending', @createdAt)`,
    );
    this.insertAtStatement = db.prepare(
      `INSERT INTO jobs (seq, id, account_id, kind, subject, payload, due_at, state, created_at)
       VALUES (@seq, @id, @accountId, @kind, @subject, @payload, @dueAt, 'pending', @createdAt)`,
    );
    // AUTOINCREMENT numbers new rows from this high-water mark, so raising it keeps seqs free for later.
    this.reserveStatement = db.prepare(
      "UPDATE sqlite_sequence SET seq = @last WHERE name = 'jobs' AND seq < @last",
    );
    this.nextDueStatement = db.prepare<[string, number], JobRow>(
      `SELECT ${COLUMNS} FROM jobs
       WHERE state = 'pending' AND account_id = ? AND due_at <= ? ORDER BY due_at, seq LIMIT 1`,
    );
    this.markStatement = db.prepare(
      'UPDATE jobs SET state = @state, finished_at = @finishedAt, error = @error WHERE seq = @seq',
    );
    this.cancelBySubjectStatement = db.prepare(
      "UPDATE jobs SET state = 'cancelled', finished_at = @at WHERE subject = @subject AND state = 'pending' AND kind = @kind",
    );
    this.cancelByIdStatement = db.prepare(
      "UPDATE jobs SET state = 'cancelled', finished_at = @at WHERE id = @id AND state = 'pending'",
    );
    this.pendingBySubjectStatement = db.prepare<[string, string], JobRow>(
      `SELECT ${COLUMNS} FROM jobs
       WHERE subject = ? AND kind = ? AND state = 'pending' ORDER BY due_at, seq`,
    );
    this.accountsWithWorkStatement = db.prepare<[], { account_id: string; due_at: number }>(
      "SELECT account_id, min(due_at) AS due_at FROM jobs WHERE state = 'pending' GROUP BY account_id",
    );
    this.resetRunningStatement = db.prepare("UPDATE jobs SET state = 'pending' WHERE state = 'running'");
    this.deleteAccountStatement = db.prepare('DELETE FROM jobs WHERE account_id = ?');
    this.upcomingStatement = db.prepare<[string, number], JobRow>(
      `SELECT ${COLUMNS} FROM jobs
       WHERE state = 'pending' AND account_id = ? ORDER BY due_at, seq LIMIT ?`,
    );
    // Only finished jobs have a `finished_at`; the partial index jobs_finished holds just those.
    this.purgeStatement = db.prepare(
      'DELETE FROM jobs WHERE account_id = @accountId AND finished_at IS NOT NULL AND finished_at < @before',
    );
    // The next account with finished jobs: one index probe per account, not a scan of the jobs.
    this.nextAccountWithFinishedStatement = db
      .prepare<[string], string>(
        'SELECT account_id FROM jobs WHERE finished_at IS NOT NULL AND account_id > ? ORDER BY account_id LIMIT 1',
      )
      .pluck();
  }

  /** Adds a pending job at the end of the queue; returns its seq. */
  insert(job: Omit<Job, 'seq'>, createdAt: number): number {
    return Number(this.insertStatement.run(this.params(job, createdAt)).lastInsertRowid);
  }

  /** Adds a pending job in a place reserved for it (`reserveThrough`). */
  insertAt(job: Job, createdAt: number): void {
    this.insertAtStatement.run({ ...this.params(job, createdAt), seq: job.seq });
  }

  /** Keeps the seqs up to `last` free: jobs added from now on are numbered after it. */
  reserveThrough(last: number): void {
    this.reserveStatement.run({ last });
  }

  /** The account's first pending job due at or before `until`. */
  nextDue(accountId: string, until: number): Job | undefined {
    const row = this.nextDueStatement.get(accountId, until);
    return row && toJob(row);
  }

  mark(seq: number, state: JobState, finishedAt: number | null, error: string | null = null): void {
    this.markStatement.run({ seq, state, finishedAt, error });
  }

  cancelBySubject(kind: string, subject: string, at: number): void {
    this.cancelBySubjectStatement.run({ kind, subject, at });
  }

  cancelById(id: string, at: number): void {
    this.cancelByIdStatement.run({ id, at });
  }

  pendingBySubject<P>(kind: string, subject: string): Job<P>[] {
    return this.pendingBySubjectStatement.all(subject, kind).map((row) => toJob<P>(row));
  }

  /** The first `limit` pending jobs of the account, soonest first (at equal times, by seq). */
  upcoming(accountId: string, limit: number): Job[] {
    return this.upcomingStatement.all(accountId, limit).map((row) => toJob(row));
  }

  /** Every account with pending jobs, and its earliest due time. */
  earliestDue(): { accountId: string; dueAt: number }[] {
    return this.accountsWithWorkStatement
      .all()
      .map((row) => ({ accountId: row.account_id, dueAt: row.due_at }));
  }

  /** Jobs a crash left `running` are pending again. */
  resetRunning(): void {
    this.resetRunningStatement.run();
  }

  /** Deletes the account's finished jobs that finished before `before`; returns how many. */
  deleteFinishedBefore(accountId: string, before: number): number {
    return this.purgeStatement.run({ accountId, before }).changes;
  }

  /** The first account after `after` (in id order) that has finished jobs. */
  nextAccountWithFinished(after: string): string | undefined {
    return this.nextAccountWithFinishedStatement.get(after);
  }

  deleteAccount(accountId: string): void {
    this.deleteAccountStatement.run(accountId);
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
