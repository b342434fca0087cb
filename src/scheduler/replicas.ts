import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { OwnedTables } from '../db/migrations.js';
import type { Sql } from '../db/sql.js';

/**
 * The processes that share one PostgreSQL database (replicas) and who among them holds what.
 *
 * Each replica keeps a row of `sandbox_replicas` fresh (a heartbeat a quarter of the lease time
 * apart). What a replica holds — an account's turn to run its due work (`account_leases`), a webhook
 * attempt it is sending (`webhook_attempts.claimed_by`) — is held for as long as its holder's row is
 * fresh: a replica that dies (`kill -9`, a lost machine) loses everything it held one lease time
 * later, all at once, with no timer per lease to renew. Freshness is judged by the database's clock,
 * so the replicas' own clocks may disagree.
 *
 * Over SQLite there is one process (the data directory's lock sees to it): it holds everything, and
 * none of this runs.
 */
export const REPLICA_TABLES: OwnedTables = {
  name: 'replicas',
  migrations: {
    sqlite: [],
    postgres: [
      `
      CREATE TABLE sandbox_replicas (
        id TEXT PRIMARY KEY,
        started_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
        seen_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
      );
      -- whose turn it is to run an account's due work; a row only while someone runs it
      CREATE TABLE account_leases (
        account_id TEXT PRIMARY KEY,
        holder TEXT NOT NULL
      );
      `,
    ],
  },
};

/** How long a replica that stopped beating still holds what it held, unless told otherwise. */
export const DEFAULT_LEASE_MS = 10_000;

/** The replica this process is: its name in the database, and whether others are alive. */
export interface Replica {
  /** Unique to this process's life: a restarted replica is a new one. */
  readonly id: string;
  /**
   * SQL true when the replica named by `column` is alive (its heartbeat is fresh). Over SQLite every
   * holder is this process.
   */
  alive(column: string): string;
}

/** The one process over SQLite. */
export const SOLE_PROCESS: Replica = { id: 'local', alive: () => 'TRUE' };

/** `<name>-<random>`: the name says which machine and process, the random part tells lives apart. */
export function replicaIdOf(name = `${hostname()}-${process.pid}`): string {
  return `${name}-${randomBytes(3).toString('hex')}`;
}

/** This process's row among the replicas, kept fresh while it runs. */
export class ReplicaPresence implements Replica {
  private beating: NodeJS.Timeout | undefined;
  private readonly chores: (() => Promise<void>)[] = [];
  private quietUntil = 0;

  constructor(
    private readonly db: Sql,
    readonly id: string,
    private readonly leaseMs: number,
    private readonly logger: Logger,
  ) {}

  alive(column: string): string {
    // The lease time is a number the sandbox chose, never input: it is written into the SQL.
    return `EXISTS (SELECT 1 FROM sandbox_replicas r WHERE r.id = ${column}
      AND r.seen_at > clock_timestamp() - interval '${Math.round(this.leaseMs)} milliseconds')`;
  }

  /** Work to do at each heartbeat (taking over what dead replicas held). */
  everyBeat(chore: () => Promise<void>): void {
    this.chores.push(chore);
  }

  async start(): Promise<void> {
    await this.beat();
    this.beating = setInterval(() => void this.tick(), Math.max(50, this.leaseMs / 4));
    this.beating.unref();
  }

  /** Leaves at once: what this replica still holds is free for the others now, not a lease time later. */
  async stop(): Promise<void> {
    clearInterval(this.beating);
    this.beating = undefined;
    await this.db.run('DELETE FROM sandbox_replicas WHERE id = ?', [this.id]).catch(() => undefined);
  }

  private async beat(): Promise<void> {
    await this.db.run(
      `INSERT INTO sandbox_replicas (id) VALUES (?)
       ON CONFLICT (id) DO UPDATE SET seen_at = clock_timestamp()`,
      [this.id],
    );
  }

  private async tick(): Promise<void> {
    try {
      await this.beat();
      for (const chore of this.chores) await chore();
    } catch (error) {
      // The database is out of reach: requests say so (503); the heartbeat says it once a minute.
      if (Date.now() >= this.quietUntil) {
        this.quietUntil = Date.now() + 60_000;
        this.logger.warn({ err: error }, 'replica heartbeat failed');
      }
    }
  }
}

/**
 * Whose turn it is to run an account's due work, across replicas. A turn is taken by writing the
 * lease row, and given back by deleting it; a lease whose holder died is taken over. Within a
 * process, the scheduler's account locks come first, so a process asks for a lease once per run.
 */
export class AccountLeases {
  /** Leases whose giving back failed (the database was out of reach): given back at a later try. */
  private readonly failedToGive = new Set<string>();

  constructor(
    private readonly db: Sql,
    private readonly replica: Replica,
  ) {}

  /** Takes the account's lease if it is free, ours already, or held by a replica that died. */
  async tryTake(accountId: string): Promise<boolean> {
    const holder = await this.db.value<string>(
      `INSERT INTO account_leases (account_id, holder) VALUES (@accountId, @me)
       ON CONFLICT (account_id) DO UPDATE SET holder = excluded.holder
        WHERE account_leases.holder = excluded.holder OR NOT ${this.replica.alive('account_leases.holder')}
       RETURNING holder`,
      { accountId, me: this.replica.id },
    );
    if (holder === undefined) return false;
    this.failedToGive.delete(accountId);
    return true;
  }

  /**
   * Waits for the account's lease: another replica is running the account's work, which ends when
   * nothing is due (or its holder dies, a lease time at most).
   */
  async take(accountId: string): Promise<void> {
    for (let pause = 5; !(await this.tryTake(accountId)); pause = Math.min(pause * 2, 100)) {
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  async give(accountId: string): Promise<void> {
    try {
      await this.db.run('DELETE FROM account_leases WHERE account_id = ? AND holder = ?', [
        accountId,
        this.replica.id,
      ]);
    } catch {
      this.failedToGive.add(accountId);
    }
  }

  /** The accounts whose lease could not be given back when their run ended (give each again). */
  unreturned(): string[] {
    return [...this.failedToGive];
  }
}
