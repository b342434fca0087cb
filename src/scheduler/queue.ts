import type { Sql } from '../db/sql.js';

/**
 * What the modules and the scheduler hand each other. Jobs: rows of the scheduler's jobs table
 * (jobs.ts), of kinds a module registers a handler for. Queues: the jobs table, and any module whose
 * work already has a row of its own with a due time and a state (a webhook delivery attempt) offers
 * that table instead, so that the row's state is the only state.
 */

/** A row of the jobs table: one piece of due work of a kind the scheduler has a handler for. */
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

/**
 * Runs a job inside the transaction that marks it done (`tx`): what it writes and the job's `done`
 * commit together, so a crash can neither lose a step nor play it twice.
 */
export type JobHandler<P = unknown> = (tx: Sql, job: Job<P>) => Promise<JobOutcome>;

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
  upcoming(job: Job<P>): Promise<ChainedItem[]>;
}

/** A job to add: what it is about, when it falls due, and `now`, when it is added. */
export interface NewJob<P> {
  accountId: string;
  kind: string;
  subject: string;
  payload: P;
  dueAt: number;
  now: number;
}

/** What ran, as an advance answers it. */
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
  /**
   * Claims the item and runs it, in one transaction; undefined when another replica claimed it
   * first (it is that replica's to run).
   */
  run(): Promise<RanJob | undefined>;
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
  earliestDue(): Promise<Iterable<{ accountId: string; dueAt: number }>>;
  /** The account's earliest item due at or before `until`. */
  nextDue(accountId: string, until: number): Promise<DueItem | undefined>;
  /**
   * Waits for the account's work handed off by `run` (a send on the wire) to have its outcome
   * written: true once all of it has. An advance waits for it, then runs whatever that scheduled
   * within its range. False sooner when due work that had to wait for some of it (a webhook holding
   * as many sends as it may) can run now: the advance runs it, then waits again.
   */
  settled?(accountId: string): Promise<boolean>;
  /** The account's first `limit` items not yet run, soonest first (`GET /_sandbox/clock/due`). */
  upcoming?(accountId: string, limit: number): Promise<UpcomingItem[]>;
}
