import type { Logger } from 'pino';
import type { WorkMetrics } from './core/metrics.js';
import type { MemoryPermit } from './db/memory-permit.js';
import type { Migrations } from './db/migrations.js';
import type { Sql } from './db/sql.js';
import type { Router } from './http/router.js';
import type { DueQueue, JobHandler, JobKind } from './scheduler/queue.js';
import type { Scheduler } from './scheduler/scheduler.js';

/**
 * What the modules offer one another, by name. Each module adds the entry it provides from its own
 * folder, as Hono's middleware adds to its `ContextVariableMap`:
 *
 *   declare module '../module.js' {
 *     interface Ports { shipments: { service: ShipmentService; store: ShipmentStore } }
 *   }
 */
export interface Ports {
  /** The sandbox's own operations, which the wiring provides. */
  sandbox: { resetAccount(accountId: string): Promise<void> };
}

/** What a module is built from: the narrow context every module shares. */
export interface ModuleContext {
  /**
   * The database every store of the module runs its SQL on, whichever engine holds it. A change that
   * spans stores runs in `db.transaction`, and passes its `tx` to every store call of the change.
   */
  readonly db: Sql;
  /**
   * Whether a store may keep what it reads in memory now: always over SQLite, over PostgreSQL only
   * while this is the only replica (db/memory-permit.ts).
   */
  readonly memory: MemoryPermit;
  readonly scheduler: Scheduler;
  readonly logger: Logger;
  /** What background work reports to `/metrics` (src/metrics/). */
  readonly metrics: WorkMetrics;
  /** The wall clock that account clocks are derived from (tests replace it). */
  readonly realNow: () => number;
  /**
   * The other modules' ports. A module reads one when it uses it, not while it is built, so that it
   * may use a module listed after it (cancelling a shipment voids its label).
   */
  readonly ports: Ports;
  /** Offers this module's port to the others. */
  provide<K extends keyof Ports>(name: K, port: Ports[K]): void;
}

/**
 * A resource module: a folder that builds its own stores and services from the context and brings
 * its routes, tables, due work and reset. The wiring keeps one list of them and does the rest:
 * migrates their tables in list order, mounts the routes, gives the scheduler the jobs and queues,
 * and asks each module, in reverse order (dependents first), to clear an account for a reset. Adding
 * a resource is a folder that exports one of these and one line in that list.
 */
export interface SandboxModule {
  readonly name: string;
  /** The module's tables, made and changed by these steps (see db/migrations.ts). */
  readonly migrations?: Migrations;
  build(context: ModuleContext): ModuleParts | Promise<ModuleParts>;
}

/** What a built module brings to the sandbox. */
export interface ModuleParts {
  /** Routes of the API, mounted under `/v1`. */
  readonly api?: Router;
  /** The sandbox's own controls, mounted under `/_sandbox`; they act on the calling key's account. */
  readonly controls?: Router;
  /** Controls that take no API key (creating an account), mounted under `/_sandbox` too. */
  readonly openControls?: Router;
  /** Routes mounted elsewhere, by path (the CDN of pre-signed label URLs). */
  readonly mounts?: Readonly<Record<string, Router>>;
  /** Kinds of scheduled job this module runs, each with its handler (and what its pending jobs stand for). */
  readonly jobs?: Readonly<Record<string, JobHandler | JobKind>>;
  /** Due work kept in the module's own tables. */
  readonly queues?: readonly DueQueue[];
  /**
   * Deletes the account's rows from the module's tables (through `tx`, the reset's transaction) and
   * forgets what it keeps in memory for the account.
   */
  reset?(tx: Sql, accountId: string): Promise<void> | void;
  /** Runs once every module is built and the scheduler is ready, before the server listens. */
  start?(): Promise<void> | void;
  /**
   * Stops what the module runs of its own, before the database closes. Work already under way may
   * go on until `deadline` (`performance.now()` milliseconds; `--shutdown-timeout`), then is cut off.
   */
  close?(deadline: number): Promise<void>;
}
