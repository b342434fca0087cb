import type { Logger } from 'pino';
import { type ClockState, clockNow } from '../core/clock.js';
import { newId } from '../core/ids.js';
import { DAY, formatTimestamp } from '../core/time.js';
import type { Db } from '../db/database.js';

/**
 * The durable scheduler: work due at a virtual instant on an account's clock. Due work lives in
 * SQLite, so it survives a restart; it runs when the account's clock reaches it, whether it gets
 * there by running (at any speed) or by jumping (`POST /_sandbox/clock/advance`). Each item runs with
 * `now` equal to its own due time, so what it records is stamped as if it had run exactly on time.
 *
 * Due work comes from queues. The scheduler's own is the `jobs` table (kinds with handlers, such as a
 * tracking step); a module whose work already has a row of its own with a due time and a state (a
 * webhook delivery attempt) offers that table as a queue instead, so the row's state is the only
 * state. Runs of one account are serialised (a jump and the background timer never run the same item
 * twice); accounts do not wait for one another.
 */

export interface Job<P = unknown> {
  id: string;
  accountId: string;
  kind: string;
  subject: string;
  payload: P;
  dueAt: number;
}

/** What a handler did, for the summary an advance answers with. */
export type JobOutcome = Record<string, unknown> | undefined;

export type JobHandler<P = unknown> = (job: Job<P>) => JobOutcome | Promise<JobOutcome>;

export interface RanJob {
  id: string;
  kind: string;
  subject: string;
  due_at: string;
  [detail: string]: unknown;
}

/** One item of a queue that is due: run in due order, ties in the order they were queued. */
export interface DueItem {
  dueAt: number;
  order: number;
  run(): RanJob | Promise<RanJob>;
}

/** Due work a module keeps in its own table. */
export interface DueQueue {
  /** Every account with work queued, and its earliest due instant (the background timer plans from it). */
  earliestDue(): Iterable<{ accountId: string; dueAt: number }>;
  /** The account's earliest item due at or before `until`. */
  nextDue(accountId: string, until: number): DueItem | undefined;
  /**
   * Resolves once the account's work handed off by `run` (a send on the wire) has its outcome
   * written. An advance waits for it, then runs whatever that scheduled within its range.
   */
  settled?(accountId: string): Promise<void>;
}

/** Where the scheduler reads each account's clock. */
export type ClockOf = (accountId: string) => ClockState | undefined;

interface JobRow {
  seq: number;
  id: string;
  account_id: string;
  kind: string;
  subject: string;
  payload: string;
  due_at: number;
}

/** The background timer never sleeps longer than this, so clock changes made elsewhere are picked up. */
const MAX_SLEEP_MS = 1000;

/**
 * How long finished jobs (done, failed, cancelled) stay in the table, on their account's clock, for
 * a look at what ran; then they are deleted. Nothing in the sandbox reads them: a job runs only
 * while pending, and an advance answers with what it ran from memory. Kept forever, every tracking
 * step of every label and every webhook attempt's job stayed in the database (in the process's
 * memory with `--memory`).
 */
export const FINISHED_JOB_RETENTION_MS = DAY;

export class Scheduler {
  private readonly handlers = new Map<string, JobHandler>();
  /** The jobs table first: at equal due times a job runs before another queue's item. */
  private readonly queues: DueQueue[];
  /** The tail of each account's queue of runs. */
  private readonly accountLocks = new Map<string, Promise<unknown>>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private ticking: Promise<void> | undefined;
  private wokenDuringTick = false;
  /** When the timer fires next (`performance.now()` milliseconds); infinity while a tick runs. */
  private plannedWakeAt = Number.POSITIVE_INFINITY;

  private readonly insertStatement;
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

  constructor(
    private readonly db: Db,
    private readonly clockOf: ClockOf,
    private readonly logger: Logger,
    private readonly realNow: () => number = Date.now,
  ) {
    this.insertStatement = db.prepare(
      `INSERT INTO jobs (id, account_id, kind, subject, payload, due_at, state, created_at)
       VALUES (@id, @accountId, @kind, @subject, @payload, @dueAt, 'pending', @createdAt)`,
    );
    this.nextDueStatement = db.prepare<[string, number], JobRow>(
      `SELECT seq, id, account_id, kind, subject, payload, due_at FROM jobs
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
      `SELECT seq, id, account_id, kind, subject, payload, due_at FROM jobs
       WHERE subject = ? AND kind = ? AND state = 'pending' ORDER BY due_at, seq`,
    );
    this.accountsWithWorkStatement = db.prepare<[], { account_id: string; due_at: number }>(
      "SELECT account_id, min(due_at) AS due_at FROM jobs WHERE state = 'pending' GROUP BY account_id",
    );
    this.resetRunningStatement = db.prepare("UPDATE jobs SET state = 'pending' WHERE state = 'running'");
    this.deleteAccountStatement = db.prepare('DELETE FROM jobs WHERE account_id = ?');
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
    this.queues = [
      {
        earliestDue: () =>
          this.accountsWithWorkStatement
            .all()
            .map((row) => ({ accountId: row.account_id, dueAt: row.due_at })),
        nextDue: (accountId, until) => {
          const row = this.nextDueStatement.get(accountId, until);
          return row && { dueAt: row.due_at, order: row.seq, run: () => this.runOne(row) };
        },
      },
    ];
  }

  register<P>(kind: string, handler: JobHandler<P>): void {
    this.handlers.set(kind, handler as JobHandler);
  }

  /** Adds a module's queue of due work; the module calls `wakeFor` whenever it queues an item. */
  addQueue(queue: DueQueue): void {
    this.queues.push(queue);
  }

  /** Deletes every job of the account, pending or finished (an account's reset). */
  deleteAccount(accountId: string): void {
    this.deleteAccountStatement.run(accountId);
  }

  /** Adds a job; call inside the transaction of the change that causes it. */
  schedule<P>(job: {
    accountId: string;
    kind: string;
    subject: string;
    payload: P;
    dueAt: number;
    now: number;
  }): string {
    const id = newId('job', job.now);
    this.insertStatement.run({
      id,
      accountId: job.accountId,
      kind: job.kind,
      subject: job.subject,
      payload: JSON.stringify(job.payload),
      dueAt: job.dueAt,
      createdAt: job.now,
    });
    this.wakeFor(job.accountId, job.dueAt);
    return id;
  }

  /** Drops the pending jobs of a kind about a subject (a voided label's scenario, say). */
  cancel(kind: string, subject: string, at: number): void {
    this.cancelBySubjectStatement.run({ kind, subject, at });
  }

  cancelJob(id: string, at: number): void {
    this.cancelByIdStatement.run({ id, at });
  }

  pending<P>(kind: string, subject: string): Job<P>[] {
    return this.pendingBySubjectStatement.all(subject, kind).map((row) => toJob<P>(row));
  }

  /**
   * Runs, in time order, every job of the account due at or before `until`, including jobs those
   * jobs schedule within the range, then `afterwards` (still holding the account's turn). With
   * `settle`, hand-offs are awaited too, as an advance must; the background timer does not wait.
   * Resolves with what ran.
   */
  runDue(
    accountId: string,
    target: number | (() => number),
    options: { settle?: boolean; afterwards?: () => void } = {},
  ): Promise<RanJob[]> {
    return this.withAccountLock(accountId, async () => {
      // A function is read once the account's turn has come (a clock advance counts from where the
      // run before it left the clock).
      const until = typeof target === 'function' ? target() : target;
      const ran: RanJob[] = [];
      for (;;) {
        for (let item = this.nextDue(accountId, until); item; item = this.nextDue(accountId, until)) {
          ran.push(await item.run());
        }
        if (!options.settle) break;
        await Promise.all(this.queues.map((queue) => queue.settled?.(accountId)));
        if (!this.nextDue(accountId, until)) break;
      }
      this.purgeFinished(accountId, until);
      options.afterwards?.();
      return ran;
    });
  }

  /** Deletes the account's jobs that finished more than the retention before `now` (its clock). */
  purgeFinished(accountId: string, now: number): number {
    return this.purgeStatement.run({ accountId, before: now - FINISHED_JOB_RETENTION_MS }).changes;
  }

  /** The earliest item due by `until` across the queues. */
  private nextDue(accountId: string, until: number): DueItem | undefined {
    let first: DueItem | undefined;
    for (const queue of this.queues) {
      const item = queue.nextDue(accountId, until);
      if (item && (!first || item.dueAt < first.dueAt)) first = item;
    }
    return first;
  }

  /**
   * Serialises work on one account: `task` starts when every earlier task of the account is done.
   * Advances use it too, so a jump and the background timer never interleave.
   */
  withAccountLock<T>(accountId: string, task: () => Promise<T>): Promise<T> {
    const previous = this.accountLocks.get(accountId) ?? Promise.resolve();
    const run = previous.then(task, task);
    const tail = run.catch(() => undefined);
    this.accountLocks.set(accountId, tail);
    void tail.then(() => {
      if (this.accountLocks.get(accountId) === tail) this.accountLocks.delete(accountId);
    });
    return run;
  }

  private async runOne(row: JobRow): Promise<RanJob> {
    const job = toJob(row);
    const handler = this.handlers.get(job.kind);
    const summary: RanJob = {
      id: job.id,
      kind: job.kind,
      subject: job.subject,
      due_at: formatTimestamp(job.dueAt),
    };
    if (!handler) {
      this.markStatement.run({ seq: row.seq, state: 'failed', finishedAt: job.dueAt, error: 'no handler' });
      this.logger.error({ job: job.id, kind: job.kind }, 'no handler for job');
      return { ...summary, error: 'no handler' };
    }
    try {
      // A synchronous handler's effects and the job's `done` commit together, so a crash can neither
      // lose a step nor play it twice. An asynchronous one is marked `running` while it works and runs
      // again after a crash.
      let pending: Promise<JobOutcome> | undefined;
      let outcome: JobOutcome;
      this.db.transaction(() => {
        const result = handler(job);
        if (result instanceof Promise) {
          pending = result;
          this.markStatement.run({ seq: row.seq, state: 'running', finishedAt: null, error: null });
        } else {
          outcome = result;
          this.markStatement.run({ seq: row.seq, state: 'done', finishedAt: job.dueAt, error: null });
        }
      })();
      if (pending) {
        outcome = await pending;
        this.markStatement.run({ seq: row.seq, state: 'done', finishedAt: job.dueAt, error: null });
      }
      return { ...summary, ...outcome };
    } catch (error) {
      this.logger.error({ err: error, job: job.id, kind: job.kind }, 'job failed');
      this.markStatement.run({ seq: row.seq, state: 'failed', finishedAt: job.dueAt, error: String(error) });
      return { ...summary, error: (error as Error).message };
    }
  }

  /**
   * Starts the background timer. Jobs left `running` by a crash run again, and everything overdue on
   * its account's clock runs before the returned promise resolves.
   */
  start(): Promise<void> {
    this.resetRunningStatement.run();
    // Accounts whose clocks have no work left are purged here; the others after each of their runs.
    const realNow = this.realNow();
    for (
      let accountId = this.nextAccountWithFinishedStatement.get('');
      accountId !== undefined;
      accountId = this.nextAccountWithFinishedStatement.get(accountId)
    ) {
      const clock = this.clockOf(accountId);
      if (clock) this.purgeFinished(accountId, clockNow(clock, realNow));
    }
    this.stopped = false;
    return this.tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    await Promise.all([...this.accountLocks.values()]);
  }

  /** Re-plans the timer now: a job or a clock changed. */
  wake(): void {
    if (this.stopped) return;
    if (this.ticking) {
      // The running tick re-plans from scratch when it ends.
      this.wokenDuringTick = true;
      return;
    }
    this.arm(0);
  }

  /**
   * Work was queued: re-plan only if it falls due before the timer would fire anyway. A label adds a
   * dozen jobs, and re-planning from scratch reads every pending job.
   */
  wakeFor(accountId: string, dueAt: number): void {
    if (this.stopped) return;
    const clock = this.clockOf(accountId);
    if (!clock) return;
    const virtualNow = clockNow(clock, this.realNow());
    if (dueAt > virtualNow && clock.frozen) return;
    if (dueAt <= virtualNow) {
      this.wake();
      return;
    }
    const delay = Math.ceil((dueAt - virtualNow) / clock.speed);
    if (performance.now() + delay >= this.plannedWakeAt) return;
    if (this.ticking) this.wokenDuringTick = true;
    else this.arm(delay);
  }

  private arm(delay: number): void {
    clearTimeout(this.timer);
    // On the timers' own clock, not the (replaceable) wall clock the account clocks derive from.
    this.plannedWakeAt = performance.now() + delay;
    this.timer = setTimeout(() => void this.tick(), delay);
    this.timer.unref();
  }

  /** Runs what is due on every account's clock now, then sleeps until the next job falls due. */
  private async tick(): Promise<void> {
    if (this.ticking) return;
    // The timer has fired: until the tick re-arms it, any new job must make it look again.
    this.plannedWakeAt = Number.POSITIVE_INFINITY;
    let sleep = MAX_SLEEP_MS;
    this.ticking = (async () => {
      const realNow = this.realNow();
      const runs: Promise<unknown>[] = [];
      const earliest = new Map<string, number>();
      for (const queue of this.queues) {
        for (const { accountId, dueAt } of queue.earliestDue()) {
          earliest.set(accountId, Math.min(dueAt, earliest.get(accountId) ?? dueAt));
        }
      }
      for (const [accountId, dueAt] of earliest) {
        const clock = this.clockOf(accountId);
        if (!clock) continue;
        const now = clockNow(clock, realNow);
        if (dueAt <= now) {
          runs.push(this.runDue(accountId, now));
        } else if (!clock.frozen) {
          sleep = Math.min(sleep, Math.ceil((dueAt - now) / clock.speed));
        }
      }
      await Promise.all(runs);
      // What just ran may have scheduled more; plan the next sleep from the new state.
      if (runs.length > 0) this.wokenDuringTick = true;
    })();
    try {
      await this.ticking;
    } catch (error) {
      this.logger.error({ err: error }, 'scheduler tick failed');
    } finally {
      this.ticking = undefined;
      if (!this.stopped) {
        const delay = this.wokenDuringTick ? 0 : Math.max(sleep, 1);
        this.wokenDuringTick = false;
        this.arm(delay);
      }
    }
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
  };
}
