import type { Scope } from '../core/actor.js';
import type { ClockState } from '../core/clock.js';
import { type MemoryPermit, mayKeep } from '../db/memory-permit.js';
import { dialect, type Sql } from '../db/sql.js';
import { hashKey } from './keys.js';
import type { Plan } from './plans.js';

export interface Account {
  id: string;
  name: string;
  plan: Plan;
  createdAt: number;
  clock: ClockState;
  /** The scenario a new label starts. */
  defaultScenario: string;
  /** Milliseconds before each webhook retry, or null for the server's ladder. */
  webhookRetrySchedule: number[] | null;
  /** Whether the plan and key ceilings are enforced for this account. */
  rateLimitsEnabled: boolean;
}

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  name: string;
  last4: string;
  scopes: Scope[];
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

interface AccountRow {
  id: string;
  name: string;
  plan: Plan;
  created_at: number;
  clock_anchor_real: number;
  clock_anchor_virtual: number;
  clock_speed: number;
  clock_frozen: number;
  default_scenario: string;
  webhook_retry_schedule: string | null;
  rate_limits_enabled: number;
}

interface KeyRow {
  id: string;
  account_id: string;
  name: string;
  last4: string;
  scopes: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** The key's columns as the authentication query names them beside the account's. */
type KeyColumns = { [K in keyof Omit<KeyRow, 'account_id'> as `key_${K}`]: KeyRow[K] };

const toAccount = (row: AccountRow): Account => ({
  id: row.id,
  name: row.name,
  plan: row.plan,
  createdAt: row.created_at,
  clock: {
    anchorReal: row.clock_anchor_real,
    anchorVirtual: row.clock_anchor_virtual,
    speed: row.clock_speed,
    frozen: row.clock_frozen === 1,
  },
  defaultScenario: row.default_scenario,
  webhookRetrySchedule:
    row.webhook_retry_schedule === null ? null : (JSON.parse(row.webhook_retry_schedule) as number[]),
  rateLimitsEnabled: row.rate_limits_enabled === 1,
});

const toKey = (row: KeyRow): ApiKeyRecord => ({
  id: row.id,
  accountId: row.account_id,
  name: row.name,
  last4: row.last4,
  scopes: JSON.parse(row.scopes) as Scope[],
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
});

const CACHE_LIMIT = 10_000;

/** A key as found: its account, and the facts other modules read with it (none when kept in memory). */
export interface FoundKey {
  account: Account;
  key: ApiKeyRecord;
  facts: Readonly<Record<string, unknown>>;
}

const SQL = {
  insertAccount: `INSERT INTO accounts (id, name, plan, created_at, clock_anchor_real, clock_anchor_virtual, clock_speed,
      clock_frozen, default_scenario)
    VALUES (@id, @name, @plan, @createdAt, @anchorReal, @anchorVirtual, @speed, @frozen, @defaultScenario)
    ON CONFLICT (id) DO NOTHING`,
  insertKey: `INSERT INTO api_keys (id, account_id, name, key_hash, last4, scopes, created_at)
    VALUES (@id, @accountId, @name, @keyHash, @last4, @scopes, @createdAt)
    ON CONFLICT DO NOTHING`,
  selectAccount: 'SELECT * FROM accounts WHERE id = ?',
  /** The key, its account, and each fact other modules asked for (`addCallerFact`), as `fact_<name>`. */
  selectByKeyHash: (facts: ReadonlyMap<string, string>) =>
    `SELECT a.*, k.id AS key_id, k.name AS key_name, k.last4 AS key_last4, k.scopes AS key_scopes,
      k.created_at AS key_created_at, k.last_used_at AS key_last_used_at, k.revoked_at AS key_revoked_at
      ${[...facts].map(([name, sql]) => `, (${sql}) AS fact_${name}`).join('')}
    FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = ?`,
  updateClock: `UPDATE accounts SET clock_anchor_real = @anchorReal, clock_anchor_virtual = @anchorVirtual,
      clock_speed = @speed, clock_frozen = @frozen WHERE id = @id`,
  // Among keys made at the same instant, the later first: SQLite's rowid, PostgreSQL's seq.
  selectKeys: {
    sqlite: 'SELECT * FROM api_keys WHERE account_id = ? ORDER BY created_at DESC, rowid DESC',
    postgres: 'SELECT * FROM api_keys WHERE account_id = ? ORDER BY created_at DESC, seq DESC',
  },
  countActiveKeys: 'SELECT count(*) FROM api_keys WHERE account_id = ? AND revoked_at IS NULL',
  revokeKey:
    'UPDATE api_keys SET revoked_at = coalesce(revoked_at, @at) WHERE id = @id AND account_id = @accountId',
  lastUsed: 'UPDATE api_keys SET last_used_at = @at WHERE id = @id',
  updateSettings: `UPDATE accounts SET plan = @plan, default_scenario = @defaultScenario,
      webhook_retry_schedule = @webhookRetrySchedule, rate_limits_enabled = @rateLimitsEnabled WHERE id = @id`,
};

/**
 * SQL for accounts and their keys. Every API request looks up its key and account. While the memory
 * permit lasts (one SQLite sandbox, or the only replica over PostgreSQL) they change only through
 * this store, so they are kept in memory, and every write here drops what it could have made stale;
 * while other replicas run, one may revoke a key or move a clock, so they are read each time.
 */
export class AccountStore {
  private readonly byKeyValue = new Map<string, FoundKey>();
  private readonly byId = new Map<string, Account>();

  constructor(private readonly memory: MemoryPermit) {
    memory.onWithdraw(() => this.forget());
  }

  /** What other modules read of an account with its key, in the same statement (see `addCallerFact`). */
  private readonly facts = new Map<string, string>();
  private selectByKeyHash = SQL.selectByKeyHash(this.facts);

  /**
   * Reads `sql`, an expression over the account's row (`a`), with every key lookup, as `found.facts[name]`:
   * what a module must know of each caller (whether any fault rule is active) costs no statement of its
   * own. Call while the sandbox is built.
   */
  addCallerFact(name: string, sql: string): void {
    if (!/^\w+$/.test(name)) throw new Error(`fact name ${name} must be a word`);
    this.facts.set(name, sql);
    this.selectByKeyHash = SQL.selectByKeyHash(this.facts);
  }

  private forget(): void {
    this.byKeyValue.clear();
    this.byId.clear();
  }

  /** Inserts the account unless one with this id exists (so seeding is idempotent). */
  async insert(q: Sql, account: Account): Promise<void> {
    await q.run(SQL.insertAccount, {
      id: account.id,
      name: account.name,
      plan: account.plan,
      createdAt: account.createdAt,
      defaultScenario: account.defaultScenario,
      ...account.clock,
      frozen: account.clock.frozen ? 1 : 0,
    });
  }

  /** An account and its first key, both or neither. */
  insertWithKey(
    q: Sql,
    account: Account,
    key: Omit<ApiKeyRecord, 'accountId' | 'last4' | 'lastUsedAt' | 'revokedAt'>,
    value: string,
  ): Promise<void> {
    return q.transaction(async (tx) => {
      await this.insert(tx, account);
      await this.insertApiKey(tx, { ...key, accountId: account.id }, value);
    });
  }

  /** Stores a key by its hash; the value itself is never written. */
  async insertApiKey(
    q: Sql,
    key: Omit<ApiKeyRecord, 'last4' | 'lastUsedAt' | 'revokedAt'>,
    value: string,
  ): Promise<void> {
    await q.run(SQL.insertKey, {
      id: key.id,
      accountId: key.accountId,
      name: key.name,
      keyHash: hashKey(value),
      last4: value.slice(-4),
      scopes: JSON.stringify(key.scopes),
      createdAt: key.createdAt,
    });
  }

  /** The account, from memory when it was read since its last change. */
  find(q: Sql, id: string): Account | Promise<Account | undefined> | undefined {
    return (this.memory.granted && this.byId.get(id)) || this.read(q, id);
  }

  private async read(q: Sql, id: string): Promise<Account | undefined> {
    const generation = this.memory.generation;
    const row = await q.get<AccountRow>(SQL.selectAccount, [id]);
    if (!row) return undefined;
    const account = toAccount(row);
    if (!mayKeep(this.memory, generation)) return account;
    if (this.byId.size >= CACHE_LIMIT) this.byId.clear();
    this.byId.set(id, account);
    return account;
  }

  /** The key with this value and its account, revoked or not; undefined when no such key exists. */
  findByKey(q: Sql, value: string): FoundKey | Promise<FoundKey | undefined> {
    return (this.memory.granted && this.byKeyValue.get(value)) || this.readByKey(q, value);
  }

  private async readByKey(q: Sql, value: string): Promise<FoundKey | undefined> {
    const generation = this.memory.generation;
    const row = await q.get<AccountRow & KeyColumns & Record<string, unknown>>(this.selectByKeyHash, [
      hashKey(value),
    ]);
    if (!row) return undefined;
    const key = toKey({
      id: row.key_id,
      account_id: row.id,
      name: row.key_name,
      last4: row.key_last4,
      scopes: row.key_scopes,
      created_at: row.key_created_at,
      last_used_at: row.key_last_used_at,
      revoked_at: row.key_revoked_at,
    });
    const facts: Record<string, unknown> = {};
    for (const name of this.facts.keys()) facts[name] = row[`fact_${name}`];
    const found: FoundKey = { account: toAccount(row), key, facts };
    if (!mayKeep(this.memory, generation)) return found;
    // Unknown keys are not remembered, so random ones cannot fill the memory. Nor are the facts: this
    // store's writes do not drop them, and a request that found its key here may read them after the
    // permit is withdrawn (another replica joins), when they are all it has to go by.
    if (this.byKeyValue.size >= CACHE_LIMIT) this.byKeyValue.clear();
    this.byKeyValue.set(value, { ...found, facts: {} });
    return found;
  }

  async saveSettings(
    q: Sql,
    account: Pick<Account, 'id' | 'plan' | 'defaultScenario' | 'webhookRetrySchedule' | 'rateLimitsEnabled'>,
  ): Promise<void> {
    this.forget();
    await q.run(SQL.updateSettings, {
      id: account.id,
      plan: account.plan,
      defaultScenario: account.defaultScenario,
      rateLimitsEnabled: account.rateLimitsEnabled ? 1 : 0,
      webhookRetrySchedule:
        account.webhookRetrySchedule === null ? null : JSON.stringify(account.webhookRetrySchedule),
    });
    this.forget();
  }

  /** Newest first, revoked ones included. */
  async keys(q: Sql, accountId: string): Promise<ApiKeyRecord[]> {
    return (await q.all<KeyRow>(dialect(q, SQL.selectKeys), [accountId])).map(toKey);
  }

  /** How many of the account's keys are not revoked. */
  async activeKeyCount(q: Sql, accountId: string): Promise<number> {
    return Number(await q.value<number>(SQL.countActiveKeys, [accountId]));
  }

  /** Revokes at once; revoking twice keeps the first time. Undefined when the account has no such key. */
  async revokeKey(q: Sql, accountId: string, keyId: string, at: number): Promise<ApiKeyRecord | undefined> {
    this.forget();
    await q.run(SQL.revokeKey, { id: keyId, accountId, at });
    this.forget();
    return (await this.keys(q, accountId)).find((key) => key.id === keyId);
  }

  /**
   * Writes keys' last-used times, all in one transaction. The cached keys keep the times they were
   * read with: the times in memory (KeyUsage) are the fresh ones, and nothing reads the cached ones.
   */
  saveLastUsed(q: Sql, times: ReadonlyMap<string, number>): Promise<void> {
    return q.transaction(async (tx) => {
      for (const [id, at] of times) await tx.run(SQL.lastUsed, { id, at });
    });
  }

  async saveClock(q: Sql, accountId: string, clock: ClockState): Promise<void> {
    this.forget();
    await q.run(SQL.updateClock, { id: accountId, ...clock, frozen: clock.frozen ? 1 : 0 });
    this.forget();
  }
}
