import type { Logger } from 'pino';
import { type ClockState, clockNow } from '../core/clock.js';
import type { Db } from '../db/database.js';
import { AccountBackoff } from './account-backoff.js';
import { AccountLocks } from './account-locks.js';
import { JobStore } from './job-store.js';
import { JobQueue } from './jobs.js';
import { purgeEveryAccount, purgeFinished, purgeFinishedIfPossible } from './purge.js';
import type { DueItem, DueQueue, Job, JobHandler, JobKind, NewJob, RanJob, UpcomingItem } from './queue.js';
import { BackgroundTimer, type Round } from './timer.js';
import { UnwrittenWrites } from './unwritten-writes.js';

/**
 * The durable scheduler: work due at a virtual instant on an account's clock. Due work lives in
 * SQLite, so it survives a restart; it runs when the account's clock reaches it, whether it gets
 * there by running (at any speed) or by jumping (`POST /_sandbox/clock/advance`). Each item runs with
 * `now` equal to its own due time, so what it records is stamped as if it had run exactly on time.
 *
 * Due work comes from queues (queue.ts): the scheduler's own jobs table (jobs.ts) and the tables of
 * modules that offer theirs. Runs of one account are serialised (account-locks.ts); accounts do not
 * wait for one another. A background timer (timer.ts) runs what falls due on running clocks.
 *
 * Work that fails for a passing reason (the disk is full, the database is busy, an I/O error) is not
 * given up: the item stays due, and the account's background runs back off (account-backoff.ts)
 * until a run succeeds. Finished jobs are deleted a day after (purge.ts).
 */

/** Where the scheduler reads each account's clock. */
export type ClockOf = (accountId: string) => ClockState | undefined;

export class Scheduler {
  private readonly store: JobStore;
  private readonly jobs: JobQueue;
  /** The jobs table first: at equal due times a job runs before another queue's item. */
  private readonly queues: DueQueue[];
  private readonly locks = new AccountLocks();
  private readonly unwritten: UnwrittenWrites;
  private readonly backoff: AccountBackoff;
  private readonly timer: BackgroundTimer;

  constructor(
    db: Db,
    private readonly clockOf: ClockOf,
    logger: Logger,
    private readonly realNow: () => number = Date.now,
  ) {
    this.store = new JobStore(db);
    this.jobs = new JobQueue({
      db,
      store: this.store,
      logger,
      wakeFor: (accountId, dueAt) => this.wakeFor(accountId, dueAt),
      retryWrite: (accountId, write, error) => this.retryWrite(accountId, write, error),
    });
    this.queues = [this.jobs];
    this.unwritten = new UnwrittenWrites(logger);
    this.timer = new BackgroundTimer(
      () => this.backgroundRound(),
      (error) => this.backoff.report(error, {}, 'scheduler tick failed'),
    );
    this.backoff = new AccountBackoff(
      logger,
      () => this.timer.running,
      () => this.wake(),
    );
  }

  /** A kind's handler; a `JobKind` also says what its pending jobs stand for. */
  register<P>(kind: string, handler: JobHandler<P> | JobKind<P>): void {
    this.jobs.register(kind, handler);
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
    this.store.deleteAccount(accountId);
  }

  /**
   * A write that failed for a passing reason and must not be lost, such as the outcome of a webhook
   * send already made: it is tried again before the account's other work, first when the account's
   * backoff ends, until it succeeds. A write that fails for any other reason is logged and dropped.
   * Writes still unwritten when the scheduler stops are lost (an undelivered webhook attempt stays
   * `sending` and is sent again at the next start).
   */
  retryWrite(accountId: string, write: () => void, error: unknown): void {
    this.unwritten.add(accountId, write);
    this.backoff.failed(accountId, error);
  }

  /** Adds a job; call inside the transaction of the change that causes it. */
  schedule<P>(job: NewJob<P>): string {
    return this.jobs.schedule(job);
  }

  /** Adds the first job of a chain of `length` items (see `JobQueue.startChain`). */
  startChain<P>(job: NewJob<P>, length: number): Job<P> {
    return this.jobs.startChain(job, length);
  }

  /** Adds the item `ahead` places after `from` in its chain (see `JobQueue.continueChain`). */
  continueChain<P>(
    from: Pick<Job, 'id' | 'seq' | 'accountId' | 'kind' | 'subject'>,
    ahead: number,
    next: { payload: P; dueAt: number; now: number },
  ): Job<P> {
    return this.jobs.continueChain(from, ahead, next);
  }

  /** Drops the pending jobs of a kind about a subject (a voided label's scenario, say). */
  cancel(kind: string, subject: string, at: number): void {
    this.jobs.cancel(kind, subject, at);
  }

  cancelJob(id: string, at: number): void {
    this.jobs.cancelJob(id, at);
  }

  pending<P>(kind: string, subject: string): Job<P>[] {
    return this.jobs.pending<P>(kind, subject);
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
      this.unwritten.writeAll(accountId);
      const ran: RanJob[] = [];
      for (;;) {
        for (let item = this.nextDue(accountId, until); item; item = this.nextDue(accountId, until)) {
          ran.push(await item.run());
        }
        if (!options.settle) break;
        await Promise.all(this.queues.map((queue) => queue.settled?.(accountId)));
        // Outcomes of those sends that could not be written at once come first.
        this.unwritten.writeAll(accountId);
        if (!this.nextDue(accountId, until)) break;
      }
      purgeFinishedIfPossible(this.store, accountId, until);
      options.afterwards?.();
      this.backoff.recovered(accountId);
      return ran;
    });
  }

  /**
   * Serialises work on one account: `task` starts when every earlier task of the account is done.
   * Advances use it too, so a jump and the background timer never interleave.
   */
  withAccountLock<T>(accountId: string, task: () => Promise<T>): Promise<T> {
    return this.locks.run(accountId, task);
  }

  /** Deletes the account's jobs that finished more than the retention before `now` (its clock). */
  purgeFinished(accountId: string, now: number): number {
    return purgeFinished(this.store, accountId, now);
  }

  /**
   * Starts the background timer. Jobs left `running` by a crash run again, and everything overdue on
   * its account's clock runs before the returned promise resolves.
   */
  start(): Promise<void> {
    this.store.resetRunning();
    const realNow = this.realNow();
    purgeEveryAccount(this.store, (accountId) => {
      const clock = this.clockOf(accountId);
      return clock && clockNow(clock, realNow);
    });
    return this.timer.start();
  }

  async stop(): Promise<void> {
    const stopping = this.timer.stop();
    this.backoff.stop();
    await stopping;
    await this.locks.idle();
    this.unwritten.lastTry();
  }

  /** Re-plans the timer now: a job or a clock changed. */
  wake(): void {
    this.timer.wake();
  }

  /**
   * Work was queued: re-plan only if it falls due before the timer would fire anyway. Every label
   * and every step of its scenario adds a job, and re-planning from scratch reads every pending job.
   */
  wakeFor(accountId: string, dueAt: number): void {
    if (!this.timer.running) return;
    const clock = this.clockOf(accountId);
    if (!clock) return;
    const virtualNow = clockNow(clock, this.realNow());
    if (dueAt > virtualNow && clock.frozen) return;
    if (dueAt <= virtualNow) this.timer.wake();
    else this.timer.wakeIn(Math.ceil((dueAt - virtualNow) / clock.speed));
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

  /** The timer's round: runs what is due on every account's clock now, and says when more falls due. */
  private async backgroundRound(): Promise<Round> {
    const realNow = this.realNow();
    const runs: Promise<boolean>[] = [];
    const earliest = new Map<string, number>();
    for (const queue of this.queues) {
      for (const { accountId, dueAt } of queue.earliestDue()) {
        earliest.set(accountId, Math.min(dueAt, earliest.get(accountId) ?? dueAt));
      }
    }
    // Writes waiting to be retried are due at once.
    for (const accountId of this.unwritten.accounts()) earliest.set(accountId, Number.NEGATIVE_INFINITY);
    let sleep = Number.POSITIVE_INFINITY;
    for (const [accountId, dueAt] of earliest) {
      // Resting after a failure: its rest's end wakes the timer.
      if (this.backoff.resting(accountId)) continue;
      const clock = this.clockOf(accountId);
      if (!clock) continue;
      const now = clockNow(clock, realNow);
      if (dueAt <= now) {
        runs.push(this.runInBackground(accountId, now));
      } else if (!clock.frozen) {
        sleep = Math.min(sleep, Math.ceil((dueAt - now) / clock.speed));
      }
    }
    this.backoff.forgetIdle(earliest);
    const succeeded = await Promise.all(runs);
    this.backoff.sayIfAllRecovered();
    // What just ran may have scheduled more; plan the next sleep from the new state.
    return { sleep, again: succeeded.includes(true) };
  }

  /** One account's due work from the timer; a failure backs the account off. True when it succeeded. */
  private async runInBackground(accountId: string, now: number): Promise<boolean> {
    try {
      await this.runDue(accountId, now);
      return true;
    } catch (error) {
      this.backoff.failed(accountId, error);
      return false;
    }
  }
}
