import type { Logger } from 'pino';
import { chainedId, newId } from '../core/ids.js';
import { snakeCaseKeys } from '../core/json.js';
import { isPassingStorageFailure } from '../core/storage-errors.js';
import { formatTimestamp } from '../core/time.js';
import type { Sql } from '../db/sql.js';
import type { JobStore } from './job-store.js';
import type { DueItem, DueQueue, Job, JobHandler, JobKind, NewJob, RanJob, UpcomingItem } from './queue.js';

const CLAIMED_ELSEWHERE = Symbol('claimed by another replica');

export interface JobQueueDeps {
  db: Sql;
  store: JobStore;
  logger: Logger;
  /** Work was queued for the account at `dueAt`: the background timer may need to wake sooner. */
  wakeFor: (accountId: string, dueAt: number) => void;
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

  /** Adds a job, inside `tx`, the transaction of the change that causes it. */
  async schedule<P>(tx: Sql, job: NewJob<P>): Promise<string> {
    const id = newId('job', job.now);
    await this.deps.store.insert(tx, { ...job, id }, job.now);
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
  async startChain<P>(tx: Sql, job: NewJob<P>, length: number): Promise<Job<P>> {
    const { now, ...rest } = job;
    const added = { ...rest, id: newId('job', now) };
    const seq = await this.deps.store.insert(tx, added, now);
    if (length > 1) await this.deps.store.reserveThrough(tx, seq, seq + length - 1);
    this.deps.wakeFor(job.accountId, job.dueAt);
    return { ...added, seq };
  }

  /**
   * Adds the item `ahead` places after `from` in its chain, in the place and under the identifier
   * reserved for it, inside `tx`, the transaction of the change that causes it (`from` running).
   */
  async continueChain<P>(
    tx: Sql,
    from: Pick<Job, 'id' | 'seq' | 'accountId' | 'kind' | 'subject'>,
    ahead: number,
    next: { payload: P; dueAt: number; now: number },
  ): Promise<Job<P>> {
    const job = {
      id: chainedId(from.id, ahead),
      accountId: from.accountId,
      kind: from.kind,
      subject: from.subject,
      payload: next.payload,
      dueAt: next.dueAt,
      seq: from.seq + ahead,
    };
    await this.deps.store.insertAt(tx, job, next.now);
    this.deps.wakeFor(job.accountId, job.dueAt);
    return job;
  }

  /** Drops the pending jobs of a kind about a subject (a voided label's scenario, say). */
  cancel(tx: Sql, kind: string, subject: string, at: number): Promise<void> {
    return this.deps.store.cancelBySubject(tx, kind, subject, at);
  }

  cancelJob(tx: Sql, id: string, at: number): Promise<void> {
    return this.deps.store.cancelById(tx, id, at);
  }

  pending<P>(q: Sql, kind: string, subject: string): Promise<Job<P>[]> {
    return this.deps.store.pendingBySubject<P>(q, kind, subject);
  }

  earliestDue(): Promise<{ accountId: string; dueAt: number }[]> {
    return this.deps.store.earliestDue(this.deps.db);
  }

  async nextDue(accountId: string, until: number): Promise<DueItem | undefined> {
    const job = await this.deps.store.nextDue(this.deps.db, accountId, until);
    return job && { dueAt: job.dueAt, order: job.seq, run: () => this.runOne(job) };
  }

  /**
   * The account's first `limit` pending jobs, each with the later items of its chain, soonest first
   * (at equal times, in the order they will run). A chain's later items come after its pending job,
   * so the first `limit` jobs hold every item of the answer.
   */
  async upcoming(accountId: string, limit: number): Promise<UpcomingItem[]> {
    const items: (UpcomingItem & { seq: number })[] = [];
    for (const job of await this.deps.store.upcoming(this.deps.db, accountId, limit)) {
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
      for (const item of await chained.upcoming(job)) {
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

  /**
   * Runs the job and marks it done in one transaction, so a crash can neither lose a step nor play it
   * twice. A job that fails for a passing reason (the disk is full, the database busy or out of reach)
   * stays pending, its transaction rolled back, and the error goes to whoever ran it; one whose
   * handler has a bug is marked failed and not run again.
   */
  private async runOne(job: Job): Promise<RanJob | undefined> {
    const { db, store, logger } = this.deps;
    const handler = this.handlers.get(job.kind);
    const summary: RanJob = {
      id: job.id,
      kind: job.kind,
      subject: job.subject,
      due_at: formatTimestamp(job.dueAt),
    };
    if (!handler) {
      await store.mark(db, job.seq, 'failed', job.dueAt, 'no handler');
      logger.error({ job: job.id, kind: job.kind }, 'no handler for job');
      return { ...summary, error: 'no handler' };
    }
    try {
      const outcome = await db.transaction(async (tx) => {
        if (!(await store.claim(tx, job.seq))) return CLAIMED_ELSEWHERE;
        const result = await handler(tx, job);
        await store.mark(tx, job.seq, 'done', job.dueAt);
        return result;
      });
      if (outcome === CLAIMED_ELSEWHERE) return undefined;
      logger.info({ account: job.accountId, ...summary, ...outcome }, 'step');
      return { ...summary, ...outcome };
    } catch (error) {
      if (isPassingStorageFailure(error)) throw error;
      // Marked first: if even that cannot be written, the job runs again later and is logged then.
      await store.mark(db, job.seq, 'failed', job.dueAt, String(error));
      logger.error({ err: error, job: job.id, kind: job.kind }, 'job failed');
      return { ...summary, error: (error as Error).message };
    }
  }
}
