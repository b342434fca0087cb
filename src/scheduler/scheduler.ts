import type { Logger } from 'pino';
import { type ClockState, clockNow } from '../core/clock.js';
import { NO_METRICS, type WorkMetrics } from '../core/metrics.js';
import type { Sql } from '../db/sql.js';
import { AccountBackoff } from './account-backoff.js';
import { AccountLocks } from './account-locks.js';
import { JobStore } from './job-store.js';
import { JobQueue } from './jobs.js';
import { purgeEveryAccount, purgeFinished, purgeFinishedIfPossible } from './purge.js';
import type { DueItem, DueQueue, Job, JobHandler, JobKind, NewJob, RanJob, UpcomingItem } from './queue.js';
import { AccountLeases, type Replica, type ReplicaPresence, SOLE_PROCESS } from './replicas.js';
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
 * Several replicas over one PostgreSQL database are one scheduler: an account's run also holds the
 * account's lease (replicas.ts), so one replica at a time runs it, and each item is claimed in the
 * transaction that runs it, so none runs twice even while a dead replica's lease changes hands. The
 * background timer of every replica looks at every account; whoever gets the lease runs it.
 *
 * Work that fails for a passing reason (the disk is full, the database is busy, an I/O error) is not
 * given up: the item stays due, and the account's background runs back off (account-backoff.ts)
 * until a run succeeds. Finished jobs are deleted a day after (purge.ts).
 */

/** Where the scheduler reads each account's clock. */
export type ClockOf = (accountId: string) => Promise<ClockState | undefined>;

/** A background run that found another replica running the account: it is that replica's to run. */
const ELSEWHERE = Symbol('run by another replica');

export class Scheduler {
  private readonly store: JobStore;
  private readonly jobs: JobQueue;
  /** The jobs table first: at equal due times a job runs before another queue's item. */
  private readonly queues: DueQueue[];
  private readonly locks = new AccountLocks();
  private readonly unwritten: UnwrittenWrites;
  private readonly backoff: AccountBackoff;
  private readonly timer: BackgroundTimer;
  /** Over PostgreSQL: the replicas' leases on accounts. */
  private readonly leases: AccountLeases | undefined;
  /** Who this process is among the replicas (over SQLite, the only one). */
  readonly replica: Replica;
  private readonly presence: ReplicaPresence | undefined;

  constructor(
    private readonly db: Sql,
    private readonly clockOf: ClockOf,
    logger: Logger,
    private readonly realNow: () => number = Date.now,
    presence?: ReplicaPresence,
    private readonly metrics: WorkMetrics = NO_METRICS,
  ) {
    this.replica = presence ?? SOLE_PROCESS;
    this.presence = presence;
    if (presence) {
      const leases = new AccountLeases(db, presence);
      this.leases = leases;
      presence.everyBeat(async () => {
        for (const accountId of leases.unreturned())
          await this.locks.run(accountId, () => leases.give(accountId));
      });
    }
    this.store = new JobStore();
    this.jobs = new JobQueue({
      db,
      store: this.store,
      logger,
      wakeFor: (accountId, dueAt) => this.wakeFor(accountId, dueAt),
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

  /**
   * Work to do at each heartbeat of this replica (taking over what dead replicas held). Over SQLite,
   * with no other replica, never.
   */
  everyBeat(chore: () => Promise<void>): void {
    this.presence?.everyBeat(chore);
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
  async upcoming(accountId: string, limit: number): Promise<UpcomingItem[]> {
    const lists = await Promise.all(this.queues.map((queue) => queue.upcoming?.(accountId, limit) ?? []));
    return lists
      .flat()
      .sort((a, b) => a.dueAt - b.dueAt)
      .slice(0, limit);
  }

  /** Deletes every job of the account, pending or finished (an account's reset), inside `tx`. */
  deleteAccount(tx: Sql, accountId: string): Promise<void> {
    return this.store.deleteAccount(tx, accountId);
  }

  /**
   * A write that failed for a passing reason and must not be lost, such as the outcome of a webhook
   * send already made: it is tried again before the account's other work, first when the account's
   * backoff ends, until it succeeds. A write that fails for any other reason is logged and dropped.
   * Writes still unwritten when the scheduler stops are lost (an undelivered webhook attempt stays
   * `sending` and is sent again at the next start).
   */
  retryWrite(accountId: string, write: () => Promise<void>, error: unknown): void {
    this.unwritten.add(accountId, write);
    this.backoff.failed(accountId, error);
  }

  /** Adds a job, inside `tx`, the transaction of the change that causes it. */
  schedule<P>(tx: Sql, job: NewJob<P>): Promise<string> {
    return this.jobs.schedule(tx, job);
  }

  /** Adds the first job of a chain of `length` items (see `JobQueue.startChain`). */
  startChain<P>(tx: Sql, job: NewJob<P>, length: number): Promise<Job<P>> {
    return this.jobs.startChain(tx, job, length);
  }

  /** Adds the item `ahead` places after `from` in its chain (see `JobQueue.continueChain`). */
  continueChain<P>(
    tx: Sql,
    from: Pick<Job, 'id' | 'seq' | 'accountId' | 'kind' | 'subject'>,
    ahead: number,
    next: { payload: P; dueAt: number; now: number },
  ): Promise<Job<P>> {
    return this.jobs.continueChain(tx, from, ahead, next);
  }

  /** Drops the pending jobs of a kind about a subject (a voided label's scenario, say). */
  cancel(tx: Sql, kind: string, subject: string, at: number): Promise<void> {
    return this.jobs.cancel(tx, kind, subject, at);
  }

  cancelJob(tx: Sql, id: string, at: number): Promise<void> {
    return this.jobs.cancelJob(tx, id, at);
  }

  pending<P>(q: Sql, kind: string, subject: string): Promise<Job<P>[]> {
    return this.jobs.pending<P>(q, kind, subject);
  }

  /**
   * Runs, in time order, every job of the account due at or before `until`, including jobs those
   * jobs schedule within the range, then `afterwards` (still holding the account's turn). With
   * `settle`, hand-offs are awaited too, as an advance must; the background timer does not wait.
   * Resolves with what ran.
   */
  runDue(
    accountId: string,
    target: number | (() => Promise<number>),
    options: { settle?: boolean; afterwards?: () => Promise<void> } = {},
  ): Promise<RanJob[]> {
    return this.withAccountLock(accountId, () => this.runWithTurn(accountId, target, options));
  }

  /**
   * Serialises work on one account: `task` starts when every earlier task of the account is done,
   * here and on every other replica. Advances use it too, so a jump and the background timer never
   * interleave.
   */
  withAccountLock<T>(accountId: string, task: () => Promise<T>): Promise<T> {
    return this.locks.run(accountId, async () => {
      await this.leases?.take(accountId);
      try {
        return await task();
      } finally {
        await this.leases?.give(accountId);
      }
    });
  }

  private async runWithTurn(
    accountId: string,
    target: number | (() => Promise<number>),
    options: { settle?: boolean; afterwards?: () => Promise<void> },
  ): Promise<RanJob[]> {
    // A function is read once the account's turn has come (a clock advance counts from where the
    // run before it left the clock).
    const until = typeof target === 'function' ? await target() : target;
    // An item that fails for a passing reason stays due and ends the run (it would only fail again):
    // the error goes to the caller, a request answers it, the background timer backs off.
    await this.unwritten.writeAll(accountId);
    const ran: RanJob[] = [];
    for (;;) {
      for (
        let item = await this.nextDue(accountId, until);
        item;
        item = await this.nextDue(accountId, until)
      ) {
        const outcome = await item.run();
        // Claimed by another replica between the look and the claim (a dead one's lease changing
        // hands): it is that replica's, and the next look finds what comes after it.
        if (outcome) ran.push(outcome);
        else await new Promise((resolve) => setTimeout(resolve, 5));
      }
      if (!options.settle) break;
      // One queue after another: one that has room again (false) is served at once, without waiting
      // for the others to settle first.
      let settled = true;
      for (const queue of this.queues) {
        if (queue.settled && !(await queue.settled(accountId))) {
          settled = false;
          break;
        }
      }
      // Outcomes of those sends that could not be written at once come first.
      await this.unwritten.writeAll(accountId);
      if (settled && !(await this.nextDue(accountId, until))) break;
    }
    await purgeFinishedIfPossible(this.db, this.store, accountId, until);
    await options.afterwards?.();
    this.backoff.recovered(accountId);
    return ran;
  }

  /**
   * The background timer's run of an account: like `runDue` to `now`, but an account whose lease
   * another replica holds is left to it rather than waited for. `onTurn` is told when the account's
   * turn has come.
   */
  private runIfFree(
    accountId: string,
    now: number | (() => Promise<number>),
    onTurn?: () => void,
  ): Promise<RanJob[] | typeof ELSEWHERE> {
    return this.locks.run(accountId, async () => {
      onTurn?.();
      if (this.leases && !(await this.leases.tryTake(accountId))) return ELSEWHERE;
      try {
        return await this.runWithTurn(accountId, now, {});
      } finally {
        await this.leases?.give(accountId);
      }
    });
  }

  /** Deletes the account's jobs that finished more than the retention before `now` (its clock). */
  purgeFinished(accountId: string, now: number): Promise<number> {
    return purgeFinished(this.db, this.store, accountId, now);
  }

  /**
   * Starts the background timer. Jobs left `running` by a sandbox of an older version run again, and
   * everything overdue on its account's clock runs before the returned promise resolves.
   */
  async start(): Promise<void> {
    await this.store.resetRunning(this.db);
    const realNow = this.realNow();
    await purgeEveryAccount(this.db, this.store, async (accountId) => {
      const clock = await this.clockOf(accountId);
      return clock && clockNow(clock, realNow);
    });
    return this.timer.start();
  }

  async stop(): Promise<void> {
    const stopping = this.timer.stop();
    this.backoff.stop();
    await stopping;
    await this.locks.idle();
    await this.unwritten.lastTry();
  }

  /** Re-plans the timer now: a job or a clock changed. */
  wake(): void {
    this.timer.wake();
  }

  /** Accounts whose due work runs soon (`runSoon`), waiting for their turn: asking again changes nothing. */
  private readonly soon = new Set<string>();

  /**
   * Runs the account's due work soon, from the background, without planning every account again
   * (which reads every queue): a queue that held the account's work back has room for it now. Its
   * clock is read once its turn comes; an ask while it waits for the turn is the same run.
   */
  runSoon(accountId: string): void {
    if (!this.timer.running || this.soon.has(accountId) || this.backoff.resting(accountId)) return;
    this.soon.add(accountId);
    const now = async () => {
      const clock = await this.clockOf(accountId);
      // No clock, no account: nothing of it is due before the epoch.
      return clock ? clockNow(clock, this.realNow()) : 0;
    };
    this.runIfFree(accountId, now, () => this.soon.delete(accountId)).catch((error: unknown) =>
      this.backoff.failed(accountId, error),
    );
  }

  /**
   * Work was queued: re-plan only if it falls due before the timer would fire anyway. Every label
   * and every step of its scenario adds a job, and re-planning from scratch reads every pending job.
   */
  wakeFor(accountId: string, dueAt: number): void {
    if (!this.timer.running) return;
    // Called inside the transaction that queues the work: the clock is read after it, not within.
    void this.clockOf(accountId).then(
      (clock) => {
        if (!clock) return;
        const virtualNow = clockNow(clock, this.realNow());
        if (dueAt > virtualNow && clock.frozen) return;
        if (dueAt <= virtualNow) this.timer.wake();
        else this.timer.wakeIn(Math.ceil((dueAt - virtualNow) / clock.speed));
      },
      // Unreadable now: the timer plans again within a second anyway.
      () => undefined,
    );
  }

  /** The earliest item due by `until` across the queues. */
  private async nextDue(accountId: string, until: number): Promise<DueItem | undefined> {
    let first: DueItem | undefined;
    for (const queue of this.queues) {
      const item = await queue.nextDue(accountId, until);
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
      for (const { accountId, dueAt } of await queue.earliestDue()) {
        earliest.set(accountId, Math.min(dueAt, earliest.get(accountId) ?? dueAt));
      }
    }
    // Writes waiting to be retried are due at once.
    for (const accountId of this.unwritten.accounts()) earliest.set(accountId, Number.NEGATIVE_INFINITY);
    let sleep = Number.POSITIVE_INFINITY;
    for (const [accountId, dueAt] of earliest) {
      // Resting after a failure: its rest's end wakes the timer.
      if (this.backoff.resting(accountId)) continue;
      const clock = await this.clockOf(accountId);
      if (!clock) continue;
      const now = clockNow(clock, realNow);
      if (dueAt <= now) {
        runs.push(this.runInBackground(accountId, now, () => this.metrics.schedulerLag(clock, now - dueAt)));
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

  /**
   * One account's due work from the timer; a failure backs the account off. True when it succeeded;
   * `ran` is told when this replica ran it (not when another holds the account).
   */
  private async runInBackground(accountId: string, now: number, ran: () => void): Promise<boolean> {
    try {
      if ((await this.runIfFree(accountId, now)) === ELSEWHERE) return false;
      ran();
      return true;
    } catch (error) {
      this.backoff.failed(accountId, error);
      return false;
    }
  }
}
