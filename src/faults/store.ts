import type { Db } from '../db/database.js';

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

/**
 * Fault rules in SQLite, with each account's active rules cached in memory: every API request asks
 * whether one matches, and almost always none exists.
 */
export class FaultStore {
  private readonly cache = new Map<string, FaultRule[]>();
  private readonly insertStatement;
  private readonly selectActive;
  private readonly selectAll;
  private readonly deleteStatement;
  private readonly deleteAllStatement;
  private readonly spendStatement;

  constructor(db: Db) {
    this.insertStatement = db.prepare(
      `INSERT INTO faults (id, account_id, method, path, status, code, retry_after, delay_ms, drop_connection, times,
         remaining, created_at)
       VALUES (@id, @accountId, @method, @path, @status, @code, @retryAfter, @delayMs, @drop, @times, @remaining, @createdAt)`,
    );
    this.selectActive = db.prepare<[string], FaultRow>(
      'SELECT * FROM faults WHERE account_id = ? AND (remaining IS NULL OR remaining > 0) ORDER BY seq',
    );
    this.selectAll = db.prepare<[string], FaultRow>(
      'SELECT * FROM faults WHERE account_id = ? ORDER BY seq DESC',
    );
    this.deleteStatement = db.prepare('DELETE FROM faults WHERE id = ? AND account_id = ?');
    this.deleteAllStatement = db.prepare('DELETE FROM faults WHERE account_id = ?');
    this.spendStatement = db.prepare(
      'UPDATE faults SET remaining = remaining - 1 WHERE id = ? AND remaining > 0',
    );
  }

  insert(rule: FaultRule): FaultRule {
    this.insertStatement.run({ ...rule, drop: rule.drop ? 1 : 0 });
    this.cache.delete(rule.accountId);
    return rule;
  }

  /** Rules that still apply, oldest first: the first match wins. */
  active(accountId: string): FaultRule[] {
    let rules = this.cache.get(accountId);
    if (!rules) {
      rules = this.selectActive.all(accountId).map(toRule);
      this.cache.set(accountId, rules);
    }
    return rules;
  }

  /** Newest first, spent ones included. */
  list(accountId: string): FaultRule[] {
    return this.selectAll.all(accountId).map(toRule);
  }

  delete(accountId: string, id: string): boolean {
    this.cache.delete(accountId);
    return this.deleteStatement.run(id, accountId).changes > 0;
  }

  deleteAll(accountId: string): void {
    this.cache.delete(accountId);
    this.deleteAllStatement.run(accountId);
  }

  /** One use of a counted rule. */
  spend(rule: FaultRule): void {
    if (rule.remaining === null) return;
    this.spendStatement.run(rule.id);
    this.cache.delete(rule.accountId);
  }
}
