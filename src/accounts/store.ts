import type { Scope } from '../core/actor.js';
import type { ClockState } from '../core/clock.js';
import { type Db, transaction } from '../db/database.js';
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

/** SQL for accounts and their keys. Statements are prepared once per database. */
export class AccountStore {
  private readonly insertAccount;
  private readonly insertKey;
  private readonly selectAccount;
  private readonly selectByKeyHash;
  private readonly updateClockStatement;
  private readonly updateSettingsStatement;
  private readonly selectKeys;
  private readonly revokeKeyStatement;
  private readonly lastUsedStatement;

  constructor(private readonly db: Db) {
    this.insertAccount = db.prepare(
      `INSERT INTO accounts (id, name, plan, created_at, clock_anchor_real, clock_anchor_virtual, clock_speed,
         clock_frozen, default_scenario)
       VALUES (@id, @name, @plan, @createdAt, @anchorReal, @anchorVirtual, @speed, @frozen, @defaultScenario)
       ON CONFLICT (id) DO NOTHING`,
    );
    this.insertKey = db.prepare(
      `INSERT INTO api_keys (id, account_id, name, key_hash, last4, scopes, created_at)
       VALUES (@id, @accountId, @name, @keyHash, @last4, @scopes, @createdAt)
       ON CONFLICT DO NOTHING`,
    );
    this.selectAccount = db.prepare<[string], AccountRow>('SELECT * FROM accounts WHERE id = ?');
    this.selectByKeyHash = db.prepare<[string], AccountRow & KeyColumns>(
      `SELECT a.*, k.id AS key_id, k.name AS key_name, k.last4 AS key_last4, k.scopes AS key_scopes,
         k.created_at AS key_created_at, k.last_used_at AS key_last_used_at, k.revoked_at AS key_revoked_at
       FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = ?`,
    );
    this.updateClockStatement = db.prepare(
      `UPDATE accounts SET clock_anchor_real = @anchorReal, clock_anchor_virtual = @anchorVirtual,
         clock_speed = @speed, clock_frozen = @frozen WHERE id = @id`,
    );
    this.selectKeys = db.prepare<[string], KeyRow>(
      'SELECT * FROM api_keys WHERE account_id = ? ORDER BY created_at DESC, rowid DESC',
    );
    this.revokeKeyStatement = db.prepare(
      'UPDATE api_keys SET revoked_at = coalesce(revoked_at, @at) WHERE id = @id AND account_id = @accountId',
    );
    this.lastUsedStatement = db.prepare('UPDATE api_keys SET last_used_at = @at WHERE id = @id');
    this.updateSettingsStatement = db.prepare(
      `UPDATE accounts SET plan = @plan, default_scenario = @defaultScenario,
         webhook_retry_schedule = @webhookRetrySchedule, rate_limits_enabled = @rateLimitsEnabled WHERE id = @id`,
    );
  }

  /** Inserts the account unless one with this id exists (so seeding is idempotent). */
  /**
   * Every API request looks up its key and account. They change only through this store, so they are
   * kept in memory and every write here drops what it could have made stale.
   */
  private readonly byKeyValue = new Map<string, { account: Account; key: ApiKeyRecord }>();
  private readonly byId = new Map<string, Account>();

  private forget(): void {
    this.byKeyValue.clear();
    this.byId.clear();
  }

  insert(account: Account): void {
    this.insertAccount.run({
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
    account: Account,
    key: Omit<ApiKeyRecord, 'accountId' | 'last4' | 'lastUsedAt' | 'revokedAt'>,
    value: string,
  ): void {
    transaction(this.db, () => {
      this.insert(account);
      this.insertApiKey({ ...key, accountId: account.id }, value);
    });
  }

  /** Stores a key by its hash; the value itself is never written. */
  insertApiKey(key: Omit<ApiKeyRecord, 'last4' | 'lastUsedAt' | 'revokedAt'>, value: string): void {
    this.insertKey.run({
      id: key.id,
      accountId: key.accountId,
      name: key.name,
      keyHash: hashKey(value),
      last4: value.slice(-4),
      scopes: JSON.stringify(key.scopes),
      createdAt: key.createdAt,
    });
  }

  find(id: string): Account | undefined {
    const cached = this.byId.get(id);
    if (cached) return cached;
    const row = this.selectAccount.get(id);
    if (!row) return undefined;
    const account = toAccount(row);
    if (this.byId.size >= CACHE_LIMIT) this.byId.clear();
    this.byId.set(id, account);
    return account;
  }

  /** The key with this value and its account, revoked or not; undefined when no such key exists. */
  findByKey(value: string): { account: Account; key: ApiKeyRecord } | undefined {
    const cached = this.byKeyValue.get(value);
    if (cached) return cached;
    const found = this.findByKeyInDatabase(value);
    // Unknown keys are not remembered, so random ones cannot fill the cache.
    if (found) {
      if (this.byKeyValue.size >= CACHE_LIMIT) this.byKeyValue.clear();
      this.byKeyValue.set(value, found);
    }
    return found;
  }

  private findByKeyInDatabase(value: string): { account: Account; key: ApiKeyRecord } | undefined {
    const row = this.selectByKeyHash.get(hashKey(value));
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
    return { account: toAccount(row), key };
  }

  saveSettings(
    account: Pick<Account, 'id' | 'plan' | 'defaultScenario' | 'webhookRetrySchedule' | 'rateLimitsEnabled'>,
  ): void {
    this.forget();
    this.updateSettingsStatement.run({
      id: account.id,
      plan: account.plan,
      defaultScenario: account.defaultScenario,
      rateLimitsEnabled: account.rateLimitsEnabled ? 1 : 0,
      webhookRetrySchedule:
        account.webhookRetrySchedule === null ? null : JSON.stringify(account.webhookRetrySchedule),
    });
  }

  /** Newest first, revoked ones included. */
  keys(accountId: string): ApiKeyRecord[] {
    return this.selectKeys.all(accountId).map(toKey);
  }

  /** Revokes at once; revoking twice keeps the first time. Undefined when the account has no such key. */
  revokeKey(accountId: string, keyId: string, at: number): ApiKeyRecord | undefined {
    this.forget();
    this.revokeKeyStatement.run({ id: keyId, accountId, at });
    return this.keys(accountId).find((key) => key.id === keyId);
  }

  /**
   * Writes keys' last-used times, all in one transaction. The cached keys keep the times they were
   * read with: the times in memory (KeyUsage) are the fresh ones, and nothing reads the cached ones.
   */
  saveLastUsed(times: ReadonlyMap<string, number>): void {
    transaction(this.db, () => {
      for (const [id, at] of times) this.lastUsedStatement.run({ id, at });
    });
  }

  saveClock(accountId: string, clock: ClockState): void {
    this.forget();
    this.updateClockStatement.run({ id: accountId, ...clock, frozen: clock.frozen ? 1 : 0 });
  }
}
