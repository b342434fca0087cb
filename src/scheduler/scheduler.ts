import type { Logger } from 'pino';
import { type ClockState, clockNow } from '../core/clock.js';
import { chainedId, newId } from '../core/ids.js';
import { snakeCaseKeys } from '../core/json.js';
import { isPassingStorageFailure } from '../core/storage-errors.js';
import { DAY, formatTimestamp } from '../core/time.js';
import { BackoffNotice, backoffDelay } from '../db/backoff.js';
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
 *
 * Work that fails for a passing reason (the disk is full, the database is busy, an I/O error) is not
 * given up: the item stays due, and the account's background runs back off (1 s, doubling, at most
 * 30 s) until a run succeeds. A job whose handler has a bug is marked failed and not run again.
 */

export interface Job<P = unknown> {
  id: string;
  accountId: string;
  kind: string;
  subject: string;
  payload: P;
  dueAt: number;
  /** The job's place in the queue: at equal due times, the lower runs first. */
  seq: number;
}

/** What a handler did, for the summary an advance answers with. */
export type JobOutcome = Record<string, unknown> | undefined;

export type JobHandler<P = unknown> = (job: Job<P>) => JobOutcome | Promise<JobOutcome>;

/** One item a pending job stands for in the list of due work: itself (`ahead` 0) or a later link of its chain. */
export interface ChainedItem {
  ahead: number;
  dueAt: number;
  /** What the item will do, in the API's words (snake_case keys). */
  detail: Record<string, unknown>;
}

/** A kind of job whose pending job may stand for a chain of items (see `Scheduler.startChain`). */
export interface JobKind<P = unknown> {
  run: JobHandler<P>;
  /** The items the pending job stands for, itself first; `GET /_sandbox/clock/due` lists them all. */
  upcoming(job: Job<P>): ChainedItem[];
}

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

/** An item of due work that has not run yet, as the clock's controls list it. */
export interface UpcomingItem {
  id: string;
  kind: string;
  subject: string;
  dueAt: number;
  /** What the item will do, in the API's words (snake_case keys). */
  detail: Record<string, unknown>;
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
  /** The account's first `limit` items not yet run, soonest first (`GET /_sandbox/clock/due`). */
  upcoming?(accountId: string, limit: number): UpcomingItem[];
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
  private readonly chainedKinds = new Map<string, JobKind>();
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
  /**
   * Accounts whose last background run failed: how many times in a row, and the timer of their rest
   * (while it is set, the background timer leaves the account alone; requests still run it).
   */
  private readonly failing = new Map<string, { failures: number; rest: NodeJS.Timeout | undefined }>();
  /** Ticks that failed in a row before reaching any account (reading the queues). */
  private tickFailures = 0;
  /** Writes that must not be lost but failed for a passing reason (a delivery's outcome), per account. */
  private readonly unwritten = new Map<string, (() => void)[]>();
  private readonly notice: BackoffNotice;

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

  constructor(
    private readonly db: Db,
    private readonly clockOf: ClockOf,
    private readonly logger: Logger,
    private readonly realNow: () => number = Date.now,
  ) {
    this.notice = new BackoffNotice(logger, 'background work');
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
    this.upcomingStatement = db.prepare<[string, number], JobRow>(
      `SELECT seq, id, account_id, kind, subject, payload, due_at FROM jobs
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
        upcoming: (accountId, limit) => this.upcomingJobs(accountId, limit),
      },
    ];
  }

  /** A kind's handler; a `JobKind` also says what its pending jobs stand for. */
  register<P>(kind: string, handler: JobHandler<P> | JobKind<P>): void {
    if (typeof handler === 'function') {
      this.handlers.set(kind, handler as JobHandler);
    } else {
      this.handlers.set(kind, handler.run as JobHandler);
      this.chainedKinds.set(kind, handler as JobKind);
    }
  }

  /** Adds a module's queue of due work; the module calls `wakeFor` whenever it queues an item. */
  addQueue(queue: DueQueue): void {
    this.queues.push(queue);
  }

  /**
   * The account's next `limit` items of due work across the queues, soonest first (at equal times, a
   * job before another queue's item, as they run).
   */
  upcoming(accountId: string, limit: number): UpcomingItem[] {
    return this.queues
      .flatMap((queue) => queue.upcoming?.(accountId, limit) ?? [])
      .sort((a, b) => a.dueAt - b.dueAt)
      .slice(0, limit);
  }

  /** Deletes every job of the account, pending or finished (an account's reset). */
  deleteAccount(accountId: string): void {
    this.deleteAccountStatement.run(accountId);
  }

  /**
   * A write that failed for a passing reason and must not be lost, such as the outcome of a webhook
   * send already made: it is tried again before the account's other work, first when the account's
   * backoff ends, until it succeeds. A write that fails for any other reason is logged and dropped.
   * Writes still unwritten when the scheduler stops are lost (an undelivered webhook attempt stays
   * `sending` and is sent again at the next start).
   */
  retryWrite(accountId: string, write: () => void, error: unknown): void {
    const writes = this.unwritten.get(accountId);
    if (writes) writes.push(write);
    else this.unwritten.set(accountId, [write]);
    this.backOff(accountId, error);
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

  /**
   * Adds the first job of a chain of `length` items that run one after another, of which only one is
   * pending at a time: each, when it runs, adds the next (`continueChain`), so a label's dozen
   * scenario steps cost one row rather than a dozen. The items keep the places they would have had
   * had they all been added now: the seqs after the first are reserved (at equal due times they run
   * in the same order among other jobs), and each takes the identifier that follows its
   * predecessor's (`chainedId`), so the list of due work can name items not yet added.
   */
  startChain<P>(
    job: { accountId: string; kind: string; subject: string; payload: P; dueAt: number; now: number },
    length: number,
  ): Job<P> {
    const id = newId('job', job.now);
    const seq = Number(
      this.insertStatement.run({
        id,
        accountId: job.accountId,
        kind: job.kind,
        subject: job.subject,
        payload: JSON.stringify(job.payload),
        dueAt: job.dueAt,
        createdAt: job.now,
      }).lastInsertRowid,
    );
    if (length > 1) this.reserveStatement.run({ last: seq + length - 1 });
    this.wakeFor(job.accountId, job.dueAt);
    return {
      id,
      accountId: job.accountId,
      kind: job.kind,
      subject: job.subject,
      payload: job.payload,
      dueAt: job.dueAt,
      seq,
    };
  }

  /**
   * Adds the item `ahead` places after `from` in its chain, in the place and under the identifier
   * reserved for it. Call inside the transaction of the change that causes it (`from` running).
   */
  continueChain<P>(
    from: Pick<Job, 'id' | 'seq' | 'accountId' | 'kind' | 'subject'>,
    ahead: number,
    next: { payload: P; dueAt: number; now: number },
  ): Job<P> {
    const job = {
      id: chainedId(from.id, ahead),
      accountId: from.accountId,
      kind: from.kind,
      subject: from.subject,
      payload: next.payload,
      dueAt: next.dueAt,
      seq: from.seq + ahead,
    };
    this.insertAtStatement.run({
      ...job,
      payload: JSON.stringify(next.payload),
      createdAt: next.now,
    });
    this.wakeFor(job.accountId, job.dueAt);
    return job;
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
      // An item that fails for a passing reason stays due and ends the run (it would only fail again):
      // the error goes to the caller, a request answers it, the background timer backs off.
      this.writeUnwritten(accountId);
      const ran: RanJob[] = [];
      for (;;) {
        for (let item = this.nextDue(accountId, until); item; item = this.nextDue(accountId, until)) {
          ran.push(await item.run());
        }
        if (!options.settle) break;
        await Promise.all(this.queues.map((queue) => queue.settled?.(accountId)));
        // Outcomes of those sends that could not be written at once come first.
        this.writeUnwritten(accountId);
        if (!this.nextDue(accountId, until)) break;
      }
      this.purgeFinishedIfPossible(accountId, until);
      options.afterwards?.();
      this.recovered(accountId);
      return ran;
    });
  }

  /**
   * The account's first `limit` pending jobs, each with the later items of its chain, soonest first
   * (at equal times, in the order they will run). A chain's later items come after its pending job,
   * so the first `limit` jobs hold every item of the answer.
   */
  private upcomingJobs(accountId: string, limit: number): UpcomingItem[] {
    const items: (UpcomingItem & { seq: number })[] = [];
    for (const row of this.upcomingStatement.all(accountId, limit)) {
      const job = toJob(row);
      const chained = this.chainedKinds.get(job.kind);
      if (!chained) {
        items.push({
          id: job.id,
          kind: job.kind,
          subject: job.subject,
          dueAt: job.dueAt,
          detail: snakeCaseKeys(job.payload),
          seq: job.seq,
        });
        continue;
      }
      for (const item of chained.upcoming(job)) {
        items.push({
          id: chainedId(job.id, item.ahead),
          kind: job.kind,
          subject: job.subject,
          dueAt: item.dueAt,
          detail: item.detail,
          seq: job.seq + item.ahead,
        });
      }
    }
    items.sort((a, b) => a.dueAt - b.dueAt || a.seq - b.seq);
    return items.slice(0, limit).map(({ seq: _, ...item }) => item);
  }

  /** Deletes the account's jobs that finished more than the retention before `now` (its clock). */
  purgeFinished(accountId: string, now: number): number {
    return this.purgeStatement.run({ accountId, before: now - FINISHED_JOB_RETENTION_MS }).changes;
  }

  /** Housekeeping that a full disk may refuse (a delete writes too): it waits for the next run. */
  private purgeFinishedIfPossible(accountId: string, now: number): void {
    try {
      this.purgeFinished(accountId, now);
    } catch (error) {
      if (!isPassingStorageFailure(error)) throw error;
    }
  }

  /** Writes the account's retried writes in order; one that still fails stops there and throws. */
  private writeUnwritten(accountId: string): void {
    const writes = this.unwritten.get(accountId);
    while (writes?.length) {
      try {
        (writes[0] as () => void)();
      } catch (error) {
        if (isPassingStorageFailure(error)) throw error;
        this.logger.error({ err: error, account: accountId }, 'dropped a write that cannot succeed');
      }
      writes.shift();
    }
    this.unwritten.delete(accountId);
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
    // A synchronous handler's effects and the job's `done` commit together, so a crash can neither
    // lose a step nor play it twice. An asynchronous one is marked `running` while it works and runs
    // again after a crash.
    let pending: Promise<JobOutcome> | undefined;
    let markedRunning = false;
    try {
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
        markedRunning = true;
        outcome = await pending;
        this.markStatement.run({ seq: row.seq, state: 'done', finishedAt: job.dueAt, error: null });
      }
      this.logger.info({ account: job.accountId, ...summary, ...outcome }, 'step');
      return { ...summary, ...outcome };
    } catch (error) {
      if (isPassingStorageFailure(error)) {
        // Not the handler's fault: the job stays pending (its transaction rolled back) and runs again.
        if (markedRunning) this.putBack(row, error);
        // Its `running` mark was never written: the job runs again, this try's outcome is of no use.
        else void pending?.catch(() => undefined);
        throw error;
      }
      // Marked first: if even that cannot be written, the job runs again later and is logged then.
      this.markStatement.run({ seq: row.seq, state: 'failed', finishedAt: job.dueAt, error: String(error) });
      this.logger.error({ err: error, job: job.id, kind: job.kind }, 'job failed');
      return { ...summary, error: (error as Error).message };
    }
  }

  /** An asynchronous job marked `running` goes back to `pending`, now or once the write succeeds. */
  private putBack(row: JobRow, error: unknown): void {
    const write = () =>
      this.markStatement.run({ seq: row.seq, state: 'pending', finishedAt: null, error: null });
    try {
      write();
    } catch {
      this.retryWrite(row.account_id, write, error);
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
    for (const { rest } of this.failing.values()) clearTimeout(rest);
    this.failing.clear();
    await this.ticking;
    await Promise.all([...this.accountLocks.values()]);
    // One last try for the writes still waiting; what fails now is lost with the process.
    let lost = 0;
    for (const accountId of [...this.unwritten.keys()]) {
      try {
        this.writeUnwritten(accountId);
      } catch {
        lost += this.unwritten.get(accountId)?.length ?? 0;
      }
    }
    this.unwritten.clear();
    if (lost > 0)
      this.logger.warn(
        { writes: lost },
        'stopped with writes that could not be made (webhook attempts still sending are sent again at the next start)',
      );
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
   * Work was queued: re-plan only if it falls due before the timer would fire anyway. Every label
   * and every step of its scenario adds a job, and re-planning from scratch reads every pending job.
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
      const runs: Promise<boolean>[] = [];
      const earliest = new Map<string, number>();
      for (const queue of this.queues) {
        for (const { accountId, dueAt } of queue.earliestDue()) {
          earliest.set(accountId, Math.min(dueAt, earliest.get(accountId) ?? dueAt));
        }
      }
      // Writes waiting to be retried are due at once.
      for (const accountId of this.unwritten.keys()) earliest.set(accountId, Number.NEGATIVE_INFINITY);
      for (const [accountId, dueAt] of earliest) {
        // Resting after a failure: its rest's end wakes the timer.
        if (this.failing.get(accountId)?.rest) continue;
        const clock = this.clockOf(accountId);
        if (!clock) continue;
        const now = clockNow(clock, realNow);
        if (dueAt <= now) {
          runs.push(this.runInBackground(accountId, now));
        } else if (!clock.frozen) {
          sleep = Math.min(sleep, Math.ceil((dueAt - now) / clock.speed));
        }
      }
      // An account that failed and has nothing due any more has nothing to back off from.
      for (const [accountId, { rest }] of this.failing) {
        if (!rest && !earliest.has(accountId)) this.recovered(accountId);
      }
      const succeeded = await Promise.all(runs);
      if (this.failing.size === 0) this.notice.succeeded();
      // What just ran may have scheduled more; plan the next sleep from the new state.
      if (succeeded.includes(true)) this.wokenDuringTick = true;
    })();
    try {
      await this.ticking;
      this.tickFailures = 0;
    } catch (error) {
      // Reading the queues failed: the whole tick backs off.
      this.tickFailures += 1;
      sleep = backoffDelay(this.tickFailures);
      this.wokenDuringTick = false;
      if (isPassingStorageFailure(error)) this.notice.failed(error);
      else this.logger.error({ err: error }, 'scheduler tick failed');
    } finally {
      this.ticking = undefined;
      if (!this.stopped) {
        const delay = this.wokenDuringTick ? 0 : Math.max(sleep, 1);
        this.wokenDuringTick = false;
        this.arm(delay);
      }
    }
  }

  /** One account's due work from the timer; a failure backs the account off. True when it succeeded. */
  private async runInBackground(accountId: string, now: number): Promise<boolean> {
    try {
      await this.runDue(accountId, now);
      return true;
    } catch (error) {
      this.backOff(accountId, error);
      return false;
    }
  }

  /** The account's work ran (from the timer or a request): it no longer backs off. */
  private recovered(accountId: string): void {
    const state = this.failing.get(accountId);
    if (state) {
      clearTimeout(state.rest);
      this.failing.delete(accountId);
    }
    if (this.failing.size === 0) this.notice.succeeded();
  }

  /**
   * The account's background runs rest after a failure, longer after each one in a row. A passing
   * failure is said once for all accounts (BackoffNotice); any other is a bug in a queue, logged each
   * time, and rests too, so that it cannot spin either.
   */
  private backOff(accountId: string, error: unknown): void {
    if (isPassingStorageFailure(error)) this.notice.failed(error);
    else this.logger.error({ err: error, account: accountId }, 'scheduled work failed');
    const state = this.failing.get(accountId) ?? { failures: 0, rest: undefined };
    state.failures += 1;
    clearTimeout(state.rest);
    this.failing.set(accountId, state);
    if (this.stopped) return;
    state.rest = setTimeout(() => {
      state.rest = undefined;
      this.wake();
    }, backoffDelay(state.failures));
    state.rest.unref();
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
