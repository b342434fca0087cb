import { ACCOUNT_CAPS, ensureUnderCap } from '../core/caps.js';
import { type Page, type PagePosition, pageOf } from '../core/paging.js';
import { holdAccount } from '../db/account-lock.js';
import { ALWAYS_GRANTED, type MemoryPermit, mayKeep, NEVER_GRANTED } from '../db/memory-permit.js';
import { afterParams, afterPlace, newestFirst } from '../db/paging.js';
import type { Sql } from '../db/sql.js';

export interface FaultRule {
  id: string;
  accountId: string;
  /** Upper-case method, or null for any. */
  method: string | null;
  /** A path under /v1, exact or ending in `*` for a prefix. */
  path: string;
  status: number | null;
  code: string | null;
  retryAfter: number | null;
  delayMs: number;
  drop: boolean;
  /** How many matching requests it affects in all (null: until removed), and how many are left. */
  times: number | null;
  remaining: number | null;
  createdAt: number;
}

interface FaultRow {
  seq: number;
  id: string;
  account_id: string;
  method: string | null;
  path: string;
  status: number | null;
  code: string | null;
  retry_after: number | null;
  delay_ms: number;
  drop_connection: number;
  times: number | null;
  remaining: number | null;
  created_at: number;
}

const toRule = (row: FaultRow): FaultRule => ({
  id: row.id,
  accountId: row.account_id,
  method: row.method,
  path: row.path,
  status: row.status,
  code: row.code,
  retryAfter: row.retry_after,
  delayMs: row.delay_ms,
  drop: row.drop_connection === 1,
  times: row.times,
  remaining: row.remaining,
  createdAt: row.created_at,
});

const SQL = {
  insert: `INSERT INTO faults (id, account_id, method, path, status, code, retry_after, delay_ms, drop_connection, times,
      remaining, created_at)
    VALUES (@id, @accountId, @method, @path, @status, @code, @retryAfter, @delayMs, @drop, @times, @remaining, @createdAt)`,
  selectActive:
    'SELECT * FROM faults WHERE account_id = ? AND (remaining IS NULL OR remaining > 0) ORDER BY seq',
  // Newest first, as every paged list: `seq` follows `created_at`, as the account's clock never goes back.
  selectPage: `SELECT * FROM faults WHERE account_id = @accountId ${newestFirst()} LIMIT @take`,
  selectPageAfter: `SELECT * FROM faults WHERE account_id = @accountId AND ${afterPlace()} ${newestFirst()}
    LIMIT @take`,
  count: 'SELECT count(*) FROM faults WHERE account_id = ?',
  deleteSpent: 'DELETE FROM faults WHERE account_id = ? AND remaining = 0',
  delete: 'DELETE FROM faults WHERE id = ? AND account_id = ?',
  deleteAll: 'DELETE FROM faults WHERE account_id = ?',
  spend: 'UPDATE faults SET remaining = remaining - 1 WHERE id = ? AND remaining > 0',
  /** Read with each caller's key (see the module): whether the caller's account has any rule in play. */
  anyActive:
    'EXISTS (SELECT 1 FROM faults f WHERE f.account_id = a.id AND (f.remaining IS NULL OR f.remaining > 0))',
};

/** The expression `AccountStore.addCallerFact` reads with each key: whether any rule is in play. */
export const ANY_ACTIVE_FAULT = SQL.anyActive;

/**
 * The fault rules. Every API request asks whether one of its account's matches, and almost always
 * none exists: while the memory permit lasts (one SQLite sandbox, or the only replica over
 * PostgreSQL), whose rows only this process writes, each account's active rules are kept in memory,
 * dropped at every write; while other replicas write too, they are read each time.
 */
export class FaultStore {
  private readonly cache = new Map<string, FaultRule[]>();

  constructor(
    private readonly db: Sql,
    private readonly memory: MemoryPermit = db.engine === 'sqlite' ? ALWAYS_GRANTED : NEVER_GRANTED,
  ) {
    memory.onWithdraw(() => this.cache.clear());
  }

  /**
   * Adds a rule, within the account's cap (counted while the account is held). Spent rules (`times`
   * used up) do nothing more: when they are what stands in the way, they make room.
   */
  async insert(rule: FaultRule): Promise<FaultRule> {
    this.cache.delete(rule.accountId);
    await this.db.transaction(async (tx) => {
      await holdAccount(tx, rule.accountId);
      const cap = ACCOUNT_CAPS.faultRules;
      if ((await this.count(tx, rule.accountId)) >= cap.max) await tx.run(SQL.deleteSpent, [rule.accountId]);
      ensureUnderCap(await this.count(tx, rule.accountId), cap);
      await tx.run(SQL.insert, { ...rule, drop: rule.drop ? 1 : 0 });
    });
    this.cache.delete(rule.accountId);
    return rule;
  }

  private async count(q: Sql, accountId: string): Promise<number> {
    return Number(await q.value<number>(SQL.count, [accountId]));
  }

  /** Rules that still apply, oldest first: the first match wins. */
  active(accountId: string): FaultRule[] | Promise<FaultRule[]> {
    return (this.memory.granted && this.cache.get(accountId)) || this.readActive(accountId);
  }

  private async readActive(accountId: string): Promise<FaultRule[]> {
    const generation = this.memory.generation;
    const rules = (await this.db.all<FaultRow>(SQL.selectActive, [accountId])).map(toRule);
    if (mayKeep(this.memory, generation)) this.cache.set(accountId, rules);
    return rules;
  }

  /** One page of the account's rules, newest first, spent ones included; and how many there are. */
  async page(
    accountId: string,
    limit: number,
    after: PagePosition | undefined,
  ): Promise<{ page: Page<FaultRule>; total: number }> {
    const statement = after ? SQL.selectPageAfter : SQL.selectPage;
    const [rows, total] = await Promise.all([
      this.db.all<FaultRow>(statement, { accountId, take: limit + 1, ...afterParams(after) }),
      this.count(this.db, accountId),
    ]);
    const page = pageOf(rows, limit, (row) => ({ createdAt: Number(row.created_at), seq: Number(row.seq) }));
    return { page: { ...page, rows: page.rows.map(toRule) }, total };
  }

  /** Whether the account's rules are kept in memory (they are dropped at its reset). */
  keeps(accountId: string): boolean {
    return this.cache.has(accountId);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    this.cache.delete(accountId);
    const deleted = (await this.db.run(SQL.delete, [id, accountId])) > 0;
    this.cache.delete(accountId);
    return deleted;
  }

  /** Every rule of the account, through `q` when given (a reset's transaction). */
  async deleteAll(accountId: string, q: Sql = this.db): Promise<void> {
    this.cache.delete(accountId);
    await q.run(SQL.deleteAll, [accountId]);
    this.cache.delete(accountId);
  }

  /**
   * One use of a counted rule, as the request it takes over is answered. Counted on the row, so a
   * rule for `times: 3` plays three times whichever replica the requests reach.
   */
  async spend(rule: FaultRule): Promise<boolean> {
    if (rule.remaining === null) return true;
    this.cache.delete(rule.accountId);
    const spent = (await this.db.run(SQL.spend, [rule.id])) > 0;
    this.cache.delete(rule.accountId);
    return spent;
  }
}
