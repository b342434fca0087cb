import type { Router } from './http/router.js';
import type { DueQueue, JobHandler, JobKind } from './scheduler/queue.js';

/**
 * What a resource module brings to the sandbox. The wiring keeps one list of them and does the rest:
 * mounts the routes, gives the scheduler the jobs and queues, and asks each module, in reverse order
 * (dependents first), to clear an account for a reset. Adding a resource is a folder that exports one
 * of these and one line in that list.
 */
export interface SandboxModule {
  readonly name: string;
  /** Routes of the API, mounted under `/v1`. */
  readonly api?: Router;
  /** The sandbox's own controls, mounted under `/_sandbox`; they act on the calling key's account. */
  readonly controls?: Router;
  /** Controls that take no API key (creating an account), mounted under `/_sandbox` too. */
  readonly openControls?: Router;
  /** Routes mounted elsewhere, by path (the CDN of pre-signed label URLs). */
  readonly mounts?: Readonly<Record<string, Router>>;
  /** The tables this module's stores own; no other module writes them. */
  readonly tables: readonly string[];
  /** Kinds of scheduled job this module runs, each with its handler (and what its pending jobs stand for). */
  readonly jobs?: Readonly<Record<string, JobHandler | JobKind>>;
  /** Due work kept in the module's own tables. */
  readonly queues?: readonly DueQueue[];
  /**
   * Deletes the account's rows from the module's tables and forgets what it keeps in memory for the
   * account. Runs inside the reset's transaction.
   */
  reset?(accountId: string): void;
  /** Runs once the scheduler is ready, before the server listens (work a crash interrupted). */
  start?(): void;
  /**
   * Stops what the module runs of its own, before the database closes. Work already under way may
   * go on until `deadline` (`performance.now()` milliseconds; `--shutdown-timeout`), then is cut off.
   */
  close?(deadline: number): Promise<void>;
}
