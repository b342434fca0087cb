import type { Logger } from 'pino';
import { chainedId, newId } from '../core/ids.js';
import { snakeCaseKeys } from '../core/json.js';
import { isPassingStorageFailure } from '../core/storage-errors.js';
import { formatTimestamp } from '../core/time.js';
import type { Db } from '../db/database.js';
import type { JobStore } from './job-store.js';
import type {
  DueItem,
  DueQueue,
  Job,
  JobHandler,
  JobKind,
  JobOutcome,
  NewJob,
  RanJob,
  UpcomingItem,
} from './queue.js';

export interface JobQueueDeps {
  db: Db;
  store: JobStore;
  logger: Logger;
  /** Work was queued for the account at `dueAt`: the background timer may need to wake sooner. */
  wakeFor: (accountId: string, dueAt: number) => void;
  /** A write that failed for a passing reason and must not be lost (see `Scheduler.retryWrite`). */
  retryWrite: (accountId: string, write: () => void, error: unknown) => void;
}

/**
 * The scheduler's own queue: the jobs table, whose kinds have handlers (a tracking step, say). A job
 * runs with `now` equal to its due time. One that fails for a passing reason (the disk is full, the
 * database is busy) stays pending and runs again; one whose handler has a bug is marked failed and
 * not run again.
 */
export class JobQueue implements DueQueue {
  private readonly handlers = new Map<string, JobHandler>();
  private readonly chainedKinds = new Map<string, JobKind>();

  constructor(private readonly deps: JobQueueDeps) {}

  /** A kind's handler; a `JobKind` also says what its pending jobs stand for. */
  register<P>(kind: string, handler: JobHandler<P> | JobKind<P>): void {
    if (typeof handler === 'function') {
      this.handlers.set(kind, handler as JobHandler);
    } else {
      this.handlers.set(kind, handler.run as JobHandler);
      this.chainedKinds.set(kind, handler as JobKind);
    }
  }

  /** Adds a job; call inside the transaction of the change that causes it. */
  schedule<P>(job: NewJob<P>): string {
    const id = newId('job', job.now);
    this.deps.store.insert({ ...job, id }, job.now);
    this.deps.wakeFor(job.accountId, job.dueAt);
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
  startChain<P>(job: NewJob<P>, length: number): Job<P> {
    const { now, ...rest } = job;
    const added = { ...rest, id: newId('job', now) };
    const seq = this.deps.store.insert(added, now);
    if (length > 1) this.deps.store.reserveThrough(seq + length - 1);
    this.deps.wakeFor(job.accountId, job.dueAt);
    return { ...added, seq };
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
    this.deps.store.insertAt(job, next.now);
    this.deps.wakeFor(job.accountId, job.dueAt);
    return job;
  }

  /** Drops the pending jobs of a kind about a subject (a voided label's scenario, say). */
  cancel(kind: string, subject: string, at: number): void {
    this.deps.store.cancelBySubject(kind, subject, at);
  }

  cancelJob(id: string, at: number): void {
    this.deps.store.cancelById(id, at);
  }

  pending<P>(kind: string, subject: string): Job<P>[] {
    return this.deps.store.pendingBySubject<P>(kind, subject);
  }

  earliestDue(): { accountId: string; dueAt: number }[] {
    return this.deps.store.earliestDue();
  }

  nextDue(accountId: string, until: number): DueItem | undefined {
    const job = this.deps.store.nextDue(accountId, until);
    return job && { dueAt: job.dueAt, order: job.seq, run: () => this.runOne(job) };
  }

  /**
   * The account's first `limit` pending jobs, each with the later items of its chain, soonest first
   * (at equal times, in the order they will run). A chain's later items come after its pending job,
   * so the first `limit` jobs hold every item of the answer.
   */
  upcoming(accountId: string, limit: number): UpcomingItem[] {
    const items: (UpcomingItem & { seq: number })[] = [];
    for (const job of this.deps.store.upcoming(accountId, limit)) {
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

  private async runOne(job: Job): Promise<RanJob> {
    const { db, store, logger } = this.deps;
    const handler = this.handlers.get(job.kind);
    const summary: RanJob = {
      id: job.id,
      kind: job.kind,
      subject: job.subject,
      due_at: formatTimestamp(job.dueAt),
    };
    if (!handler) {
      store.mark(job.seq, 'failed', job.dueAt, 'no handler');
      logger.error({ job: job.id, kind: job.kind }, 'no handler for job');
      return { ...summary, error: 'no handler' };
    }
    // A synchronous handler's effects and the job's `done` commit together, so a crash can neither
    // lose a step nor play it twice. An asynchronous one is marked `running` while it works and runs
    // again after a crash.
    let pending: Promise<JobOutcome> | undefined;
    let markedRunning = false;
    try {
      let outcome: JobOutcome;
      db.transaction(() => {
        const result = handler(job);
        if (result instanceof Promise) {
          pending = result;
          store.mark(job.seq, 'running', null);
        } else {
          outcome = result;
          store.mark(job.seq, 'done', job.dueAt);
        }
      })();
      if (pending) {
        markedRunning = true;
        outcome = await pending;
        store.mark(job.seq, 'done', job.dueAt);
      }
      logger.info({ account: job.accountId, ...summary, ...outcome }, 'step');
      return { ...summary, ...outcome };
    } catch (error) {
      if (isPassingStorageFailure(error)) {
        // Not the handler's fault: the job stays pending (its transaction rolled back) and runs again.
        if (markedRunning) this.putBack(job, error);
        // Its `running` mark was never written: the job runs again, this try's outcome is of no use.
        else void pending?.catch(() => undefined);
        throw error;
      }
      // Marked first: if even that cannot be written, the job runs again later and is logged then.
      store.mark(job.seq, 'failed', job.dueAt, String(error));
      logger.error({ err: error, job: job.id, kind: job.kind }, 'job failed');
      return { ...summary, error: (error as Error).message };
    }
  }

  /** An asynchronous job marked `running` goes back to `pending`, now or once the write succeeds. */
  private putBack(job: Job, error: unknown): void {
    const write = () => this.deps.store.mark(job.seq, 'pending', null);
    try {
      write();
    } catch {
      this.deps.retryWrite(job.accountId, write, error);
    }
  }
}
