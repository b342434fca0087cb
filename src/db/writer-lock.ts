import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { isDatabaseUnavailable } from '../core/storage-errors.js';
import type { MemoryPermit } from './memory-permit.js';

/**
 * The replicas' lock over one PostgreSQL schema: a session-level advisory lock on a connection of
 * its own, which every process that writes the schema holds before it writes. The only replica holds
 * it exclusively, and may keep what it reads in memory as one SQLite sandbox does (a `MemoryPermit`);
 * while several run, each holds it shared and reads every time.
 *
 * A replica that starts takes the lock exclusively if it is free. If it is not, it asks the holder to
 * step aside (`NOTIFY`) until it can take it shared: the sole replica, told so, drops what it kept,
 * takes the lock shared and only then lets its exclusive hold go, so the lock is never free in between
 * and the newcomer writes nothing before the other's memory is gone. A replica that shares tries every
 * so often to hold it alone again, which succeeds once the others have left (or died: PostgreSQL ends
 * a dead process's session, and its locks with it).
 *
 * A replica whose lock session is lost (the server restarted, the connection broke) stops keeping at
 * once and writes nothing until it holds the lock again: its statements wait for it (`held`), and fail
 * as the database being away when it does not come. The sole replica checks its session every so often
 * and keeps nothing for a grace time after taking the lock alone, in which the statements another
 * replica had already sent before losing its own session are answered.
 */
export interface WriterLockTiming {
  /** How often a replica that starts asks the sole one to step aside, and looks again. */
  askEveryMs: number;
  /** How often a replica that shares the lock tries to hold it alone again. */
  regainEveryMs: number;
  /** How often the sole replica checks that its lock's session is alive. */
  checkEveryMs: number;
  /** How long after taking the lock alone a replica waits before it keeps anything. */
  graceMs: number;
  /** How long after losing its lock's session a replica tries again. */
  reconnectMs: number;
  /** How long a statement waits for the lock before it fails as the database being away. */
  waitMs: number;
}

export const WRITER_LOCK_TIMING: WriterLockTiming = {
  askEveryMs: 25,
  regainEveryMs: 1_000,
  checkEveryMs: 1_000,
  graceMs: 1_000,
  reconnectMs: 250,
  waitMs: 2_000,
};

/** Where a replica that starts asks; the payload is its schema, so that other schemas' replicas ignore it. */
const CHANNEL = 'shipping_sandbox_writers';
/**
 * The lock's key: the two-number form, whose keys never meet the one-number keys the sandbox's
 * transactions lock (account sends, the journal's order), one for each schema.
 */
const KEY = "hashtext('shipping-sandbox writers'), hashtext(current_schema())";

type Hold = 'none' | 'shared' | 'exclusive';

export class WriterLock implements MemoryPermit {
  granted = false;
  generation = 0;
  private hold: Hold = 'none';
  private client: pg.Client | undefined;
  private schema = '';
  private joining: Promise<void> | undefined;
  /** Statements waiting for the lock: called without an error once it is held, with one at `close`. */
  private readonly waiters = new Set<(error?: Error) => void>();
  private readonly drops: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private grace: NodeJS.Timeout | undefined;
  private closed = false;
  private transactions = 0;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly timing: WriterLockTiming = WRITER_LOCK_TIMING,
  ) {}

  onWithdraw(drop: () => void): void {
    this.drops.push(drop);
  }

  get writing(): boolean {
    return this.transactions > 0;
  }

  /**
   * A transaction of this process begins: what is read meanwhile outside it is not kept (`mayKeep`).
   * Answers what to call once it has ended (committed, rolled back or lost).
   */
  transactionBegins(): () => void {
    this.transactions += 1;
    this.generation += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.transactions -= 1;
      this.generation += 1;
    };
  }

  /**
   * Undefined while this process holds the lock (a statement goes ahead at once); otherwise a promise
   * that resolves once it does, and fails as the database being away after `waitMs`.
   */
  held(waitMs = this.timing.waitMs): Promise<void> | undefined {
    if (this.hold !== 'none') return undefined;
    if (this.closed) return Promise.reject(unavailable('Cannot use a pool after calling end'));
    void this.join();
    return new Promise((resolve, reject) => {
      const done = (error?: Error) => {
        clearTimeout(late);
        this.waiters.delete(done);
        if (error) reject(error);
        else resolve();
      };
      const late = setTimeout(() => {
        this.waiters.delete(done);
        reject(unavailable('timeout exceeded when trying to connect: the replicas lock was not held'));
      }, waitMs);
      this.waiters.add(done);
    });
  }

  /** Lets the lock go: another replica may hold it alone from now on. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    clearTimeout(this.grace);
    if (this.granted) this.withdraw();
    const client = this.client;
    this.client = undefined;
    this.hold = 'none';
    // What waits for the lock fails now, rather than when its time is up (keeping the process alive).
    for (const waiter of [...this.waiters]) waiter(unavailable('Cannot use a pool after calling end'));
    await client?.end().catch(() => undefined);
    await this.joining;
  }

  private join(): Promise<void> {
    this.joining ??= this.connectAndJoin().finally(() => {
      this.joining = undefined;
    });
    return this.joining;
  }

  private async connectAndJoin(): Promise<void> {
    while (!this.closed && this.hold === 'none') {
      const client = new pg.Client(this.config);
      client.on('error', () => this.lost(client));
      client.on('end', () => this.lost(client));
      client.on('notification', (message) => {
        if (message.channel === CHANNEL && message.payload === this.schema) this.stepAside(client);
      });
      try {
        await client.connect();
        const schema = await client.query<{ schema: string }>(
          "SELECT coalesce(current_schema(), '') AS schema",
        );
        this.schema = schema.rows[0]?.schema ?? '';
        await client.query(`LISTEN ${CHANNEL}`);
        // Closed while this connection opened: `close` did not see it, so it is ended here, before it
        // takes the lock (it would hold it for good, and keep the process alive).
        if (this.closed) throw new Error('closed');
        this.client = client;
        if (await this.take(client, 'pg_try_advisory_lock')) return this.become('exclusive');
        for (;;) {
          if (await this.take(client, 'pg_try_advisory_lock_shared')) return this.become('shared');
          await client.query('SELECT pg_notify($1, $2)', [CHANNEL, this.schema]);
          await sleep(this.timing.askEveryMs);
          if (this.client !== client || this.closed) throw new Error('the lock session ended');
        }
      } catch (error) {
        if (this.client === client) this.client = undefined;
        // The database cannot be reached: what waits fails now, as it would on a connection, rather
        // than waiting out its time for a lock that cannot come (the next try is for what comes next).
        if (isDatabaseUnavailable(error)) for (const waiter of [...this.waiters]) waiter(error as Error);
        await client.end().catch(() => undefined);
        if (!this.closed) await sleep(this.timing.reconnectMs);
      }
    }
  }

  private async take(client: pg.Client, how: string): Promise<boolean> {
    const { rows } = await client.query<{ taken: boolean }>(`SELECT ${how}(${KEY}) AS taken`);
    return rows[0]?.taken === true;
  }

  private become(hold: 'shared' | 'exclusive'): void {
    // Closed as the lock was taken: `close` ends the session, and the lock with it.
    if (this.closed) return;
    this.hold = hold;
    for (const waiter of [...this.waiters]) waiter();
    if (hold === 'exclusive') this.grantAfterGrace();
    this.schedule();
  }

  private grantAfterGrace(): void {
    clearTimeout(this.grace);
    this.grace = setTimeout(() => {
      if (this.hold !== 'exclusive' || this.closed) return;
      this.granted = true;
      this.generation += 1;
    }, this.timing.graceMs);
    this.grace.unref();
  }

  private withdraw(): void {
    this.granted = false;
    this.generation += 1;
    for (const drop of this.drops) drop();
  }

  /** Alone: checks the session is alive. Shared: tries to be alone again. */
  private schedule(): void {
    clearTimeout(this.timer);
    const client = this.client;
    if (this.closed || this.hold === 'none' || !client) return;
    const every = this.hold === 'exclusive' ? this.timing.checkEveryMs : this.timing.regainEveryMs;
    this.timer = setTimeout(() => void this.tick(client), every);
    this.timer.unref();
  }

  private async tick(client: pg.Client): Promise<void> {
    try {
      if (this.hold === 'exclusive') await client.query('SELECT 1');
      else if (this.hold === 'shared' && (await this.take(client, 'pg_try_advisory_lock'))) {
        // Alone again: the shared hold goes, the exclusive one stays.
        await client.query(`SELECT pg_advisory_unlock_shared(${KEY})`);
        if (this.client !== client) return;
        this.hold = 'exclusive';
        this.grantAfterGrace();
      }
    } catch {
      this.lost(client);
      return;
    }
    this.schedule();
  }

  /** Another replica starts: what was kept goes, then the lock turns shared (never free in between). */
  private stepAside(client: pg.Client): void {
    if (client !== this.client || this.hold !== 'exclusive') return;
    clearTimeout(this.grace);
    if (this.granted) this.withdraw();
    this.hold = 'shared';
    client
      .query(`SELECT pg_advisory_lock_shared(${KEY})`)
      .then(() => client.query(`SELECT pg_advisory_unlock(${KEY})`))
      .then(
        () => this.schedule(),
        () => this.lost(client),
      );
  }

  private lost(client: pg.Client): void {
    if (client !== this.client) return;
    this.client = undefined;
    this.hold = 'none';
    clearTimeout(this.timer);
    clearTimeout(this.grace);
    if (this.granted) this.withdraw();
    client.end().catch(() => undefined);
    if (!this.closed) setTimeout(() => void this.join(), this.timing.reconnectMs).unref();
  }
}

/** An error the sandbox answers as the database being away (`503 service_unavailable`). */
function unavailable(message: string): Error {
  return Object.assign(new Error(message), { code: '57P03' });
}
