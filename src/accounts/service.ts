import type { Logger } from 'pino';
import { type Caller, isFullKey, SCOPES, type Scope } from '../core/actor.js';
import { ACCOUNT_CAPS, ensureUnderCap } from '../core/caps.js';
import { type ClockState, clockNow, startClock } from '../core/clock.js';
import { RETRY_DELAY_RULE, retryDelayMillis } from '../core/duration.js';
import { ApiError, invalidField, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { formatTimestamp } from '../core/time.js';
import { holdAccount } from '../db/account-lock.js';
import type { Sql } from '../db/sql.js';
import { refuseChangesNeedingAdmin } from './admin-settings.js';
import { DEFAULT_ACCOUNT, refusePublishedKey } from './default-account.js';
import { KeyUsage } from './key-usage.js';
import { keyShape, newKeyValue } from './keys.js';
import { ceilingsFor, type PlanCeiling } from './plans.js';
import type { AccountSettingsInput, CreateAccountInput, CreateKeyInput } from './schema.js';
import type { Account, AccountStore, ApiKeyRecord, FoundKey } from './store.js';

export interface AccountServiceOptions {
  db: Sql;
  store: AccountStore;
  /** The speed new accounts' clocks start at (`--clock-speed`). */
  clockSpeed: number;
  /** The server's webhook retry ladder, which an account uses unless it sets its own. */
  serverRetryLadder: readonly number[];
  /** False with `--no-rate-limits`: no account's ceilings are enforced. */
  serverEnforcesRateLimits: boolean;
  /** Whether the default account and its published key exist (a loopback sandbox without an admin token). */
  offersDefaultAccount: boolean;
  /** Refuses a scenario name that is not loaded, as `422 invalid_field` naming `field`. */
  checkScenario: (name: string, field: string) => void;
  realNow: () => number;
  logger: Logger;
}

/** What the rate limiter needs of a caller: its ceilings, whether they bite, and its clock's speed. */
export interface CallerLimits {
  ceilings: readonly PlanCeiling[];
  enforce: boolean;
  clockSpeed: number;
  frozen: boolean;
}

/**
 * A caller as `resolveKey` found it, with what its key lookup read (the account, the facts) for the
 * rest of its request (its limits, its facts), kept where only this file sees it. Not a WeakMap from
 * callers to lookups: an entry made on every request cost about 0.4 µs with the collector's work on
 * it. Its own properties are a `Caller`'s, in the same order.
 */
class FoundCaller implements Caller {
  accountId: string;
  keyId: string;
  scopes: readonly Scope[];
  now: number;
  readonly #lookup: FoundKey;

  constructor(lookup: FoundKey, now: number) {
    this.accountId = lookup.account.id;
    this.keyId = lookup.key.id;
    this.scopes = lookup.key.scopes;
    this.now = now;
    this.#lookup = lookup;
  }

  /** What the caller's key lookup read; undefined for a caller `resolveKey` did not find (a job's). */
  static lookupOf(caller: Caller): FoundKey | undefined {
    return #lookup in caller ? caller.#lookup : undefined;
  }
}

/** Accounts and their keys: creating them, knowing who calls, and the account's settings. */
export class AccountService {
  private readonly store: AccountStore;
  private readonly db: Sql;
  private readonly realNow: () => number;
  /** Per account object (replaced whenever the account changes), each key's limits. */
  private readonly limits = new WeakMap<Account, Map<string, CallerLimits>>();

  /** When each key was last used, written in the background. */
  private readonly usage: KeyUsage;

  constructor(private readonly options: AccountServiceOptions) {
    this.store = options.store;
    this.db = options.db;
    this.realNow = options.realNow;
    this.usage = new KeyUsage((times) => this.store.saveLastUsed(this.db, times), options.logger);
  }

  /** Starts writing keys' last-used times in the background. */
  start(): void {
    this.usage.start();
  }

  /** Writes the last-used times still in memory; before the database closes. */
  close(): Promise<void> {
    return this.usage.close();
  }

  /** Creates the default account and its key unless they exist; a revoked default key stays revoked. */
  seedDefaultAccount(): Promise<void> {
    const { id, name, plan, api_key } = DEFAULT_ACCOUNT;
    const now = this.realNow();
    return this.store.insertWithKey(
      this.db,
      this.newAccount(id, name, plan, now),
      { id: api_key.id, name: api_key.name, scopes: [...SCOPES], createdAt: now },
      api_key.value,
    );
  }

  /** A fresh, isolated account with one all-scopes key, whose value is returned once. */
  async createAccount(input: CreateAccountInput): Promise<{ account: Account; apiKey: string }> {
    const now = this.realNow();
    const id = newId('acct', now);
    const account = this.newAccount(
      id,
      input.name ?? `Sandbox account ${id.slice(-6)}`,
      input.plan ?? 'growth',
      now,
    );
    const apiKey = newKeyValue();
    await this.store.insertWithKey(
      this.db,
      account,
      { id: newId('key', now), name: 'Default key', scopes: [...SCOPES], createdAt: now },
      apiKey,
    );
    return { account, apiKey };
  }

  private newAccount(id: string, name: string, plan: Account['plan'], now: number): Account {
    return {
      id,
      name,
      plan,
      createdAt: now,
      clock: startClock(now, this.options.clockSpeed),
      defaultScenario: 'standard',
      webhookRetrySchedule: null,
      rateLimitsEnabled: true,
    };
  }

  /**
   * Who calls with this key: its account, its scopes, and the account's clock read once. 401
   * `invalid_api_key` for a malformed, unknown, revoked or live key (thrown, or the promise rejected).
   * Answered at once, without a promise, when the store has the key in memory (SQLite): every request
   * asks, and a promise turn is a measurable part of a read's CPU (docs/benchmark.md).
   */
  resolveKey(value: string): Caller | Promise<Caller> {
    const shape = keyShape(value);
    if (shape === 'live') {
      throw new ApiError(
        401,
        'invalid_api_key',
        'This is a live key (svc_live_…). The sandbox takes test keys (svc_test_…) only.',
      );
    }
    if (!this.options.offersDefaultAccount && value === DEFAULT_ACCOUNT.api_key.value)
      throw refusePublishedKey();
    const found = shape === 'malformed' ? undefined : this.store.findByKey(this.db, value);
    return found instanceof Promise ? found.then((read) => this.callerOf(read)) : this.callerOf(found);
  }

  private callerOf(found: FoundKey | undefined): Caller {
    if (!found) throw new ApiError(401, 'invalid_api_key', 'The API key is not valid.');
    if (found.key.revokedAt !== null)
      throw new ApiError(401, 'invalid_api_key', 'The API key has been revoked.');

    const now = clockNow(found.account.clock, this.realNow());
    // In memory only: reading never writes (on a full disk every request would fail).
    this.usage.noteUse(found.key.id, now);
    return new FoundCaller(found, now);
  }

  /**
   * A fact another module read with the caller's key (`AccountStore.addCallerFact`); undefined for a
   * caller not resolved by `resolveKey` (a scheduled job's actor), or a fact not asked for.
   */
  factOf(caller: Caller, name: string): unknown {
    return FoundCaller.lookupOf(caller)?.facts[name];
  }

  /**
   * Whose revoked key this is, for the request journal (a request refused with it is the account's
   * client using a key it should have dropped). Undefined for a key that is valid, unknown or not a
   * test key: those belong to no account, and nothing is kept of them.
   */
  async revokedKeyOf(value: string): Promise<{ accountId: string; keyId: string; now: number } | undefined> {
    if (keyShape(value) !== 'test') return undefined;
    const found = await this.store.findByKey(this.db, value);
    if (!found || found.key.revokedAt === null) return undefined;
    return {
      accountId: found.account.id,
      keyId: found.key.id,
      now: clockNow(found.account.clock, this.realNow()),
    };
  }

  /**
   * The caller's rate limits, worked out once per account state and key. At once (no promise) for a
   * caller that `resolveKey` found, as every request's is: the account is the one its key lookup read.
   */
  limitsOf(caller: Caller): CallerLimits | Promise<CallerLimits> {
    const account = FoundCaller.lookupOf(caller)?.account;
    return account
      ? this.limitsIn(account, caller)
      : this.get(caller.accountId).then((read) => this.limitsIn(read, caller));
  }

  private limitsIn(account: Account, caller: Caller): CallerLimits {
    let byKey = this.limits.get(account);
    if (!byKey) {
      byKey = new Map();
      this.limits.set(account, byKey);
    }
    let limits = byKey.get(caller.keyId);
    if (!limits) {
      limits = {
        ceilings: ceilingsFor(account, caller.keyId),
        enforce: this.options.serverEnforcesRateLimits && account.rateLimitsEnabled,
        clockSpeed: account.clock.speed,
        frozen: account.clock.frozen,
      };
      byKey.set(caller.keyId, limits);
    }
    return limits;
  }

  async get(accountId: string): Promise<Account> {
    const account = await this.store.find(this.db, accountId);
    if (!account) throw new ApiError(404, 'not_found', `No account '${accountId}'.`);
    return account;
  }

  /** The account's clock, for the clock module and the scheduler. */
  async clockOf(accountId: string): Promise<ClockState | undefined> {
    return (await this.store.find(this.db, accountId))?.clock;
  }

  saveClock(accountId: string, clock: ClockState, q: Sql = this.db): Promise<void> {
    return this.store.saveClock(q, accountId, clock);
  }

  /** The scenario a new label of the account plays. */
  async defaultScenarioOf(q: Sql, accountId: string): Promise<string> {
    return (await this.store.find(q, accountId))?.defaultScenario ?? 'standard';
  }

  /** Milliseconds before each webhook retry: the account's own ladder, or the server's. */
  async retryLadderOf(q: Sql, accountId: string): Promise<readonly number[]> {
    return (await this.store.find(q, accountId))?.webhookRetrySchedule ?? this.options.serverRetryLadder;
  }

  /** `admin`: the request carries the server's admin token, or the server has none. */
  async updateSettings(
    accountId: string,
    change: AccountSettingsInput,
    { admin }: { admin: boolean },
  ): Promise<Account> {
    const account = await this.get(accountId);
    if (!admin) refuseChangesNeedingAdmin(account, change);
    if (change.default_scenario !== undefined)
      this.options.checkScenario(change.default_scenario, 'default_scenario');
    const ladder = change.webhook_retry_schedule;
    const updated: Account = {
      ...account,
      plan: change.plan ?? account.plan,
      defaultScenario: change.default_scenario ?? account.defaultScenario,
      rateLimitsEnabled: change.rate_limits ?? account.rateLimitsEnabled,
      webhookRetrySchedule:
        ladder === undefined
          ? account.webhookRetrySchedule
          : ladder === null
            ? null
            : ladder.map((delay, i) => {
                const millis = retryDelayMillis(delay);
                const field = `webhook_retry_schedule.${i}`;
                if (millis === undefined)
                  throw invalidField(field, `'${field}' must be ${RETRY_DELAY_RULE}.`);
                return millis;
              }),
    };
    await this.store.saveSettings(this.db, updated);
    return updated;
  }

  present(account: Account) {
    return {
      id: account.id,
      name: account.name,
      plan: account.plan,
      default_scenario: account.defaultScenario,
      webhook_retry_schedule: (account.webhookRetrySchedule ?? this.options.serverRetryLadder).map(
        (ms) => ms / 1000,
      ),
      rate_limits: account.rateLimitsEnabled,
      created_at: formatTimestamp(account.createdAt),
    };
  }

  /**
   * A new key of the caller's account, with at most the caller's own scopes (all of them when not
   * given), within the account's cap of active keys (counted while the account is held).
   */
  async createKey(caller: Caller, input: CreateKeyInput) {
    const lacking = input.scopes?.find((scope) => !caller.scopes.includes(scope));
    if (lacking !== undefined) {
      throw new ApiError(
        403,
        'insufficient_scope',
        `A key cannot make a key with the '${lacking}' scope, which it lacks.`,
        {
          field: 'scopes',
        },
      );
    }
    const value = newKeyValue();
    const key = {
      id: newId('key', caller.now),
      accountId: caller.accountId,
      name: input.name,
      scopes: input.scopes ?? [...caller.scopes],
      createdAt: caller.now,
    };
    await this.db.transaction(async (tx) => {
      await holdAccount(tx, caller.accountId);
      ensureUnderCap(await this.store.activeKeyCount(tx, caller.accountId), ACCOUNT_CAPS.activeKeys);
      await this.store.insertApiKey(tx, key, value);
    });
    return { id: key.id, name: key.name, scopes: key.scopes, created_at: formatTimestamp(caller.now), value };
  }

  /** Newest first, revoked ones included, each with its freshest last-used time. */
  async keys(accountId: string): Promise<ApiKeyRecord[]> {
    return (await this.store.keys(this.db, accountId)).map((key) => {
      const lastUsedAt = this.usage.lastUsed(key.id);
      return lastUsedAt === undefined ? key : { ...key, lastUsedAt };
    });
  }

  /** Revokes a key of the account at once: any key may revoke itself, only a full key another. */
  async revokeKey(caller: Caller, keyId: string): Promise<{ id: string; revoked_at: string }> {
    if (keyId !== caller.keyId && !isFullKey(caller)) {
      throw new ApiError(
        403,
        'insufficient_scope',
        'Only a full API key (all five scopes) can revoke another key; a restricted key can revoke itself.',
      );
    }
    const key = await this.store.revokeKey(this.db, caller.accountId, keyId, caller.now);
    if (!key?.revokedAt) throw notFound('key', keyId);
    return { id: key.id, revoked_at: formatTimestamp(key.revokedAt) };
  }

  presentKey(key: ApiKeyRecord) {
    return {
      id: key.id,
      name: key.name,
      scopes: key.scopes,
      created_at: formatTimestamp(key.createdAt),
      last_used_at: key.lastUsedAt === null ? null : formatTimestamp(key.lastUsedAt),
      last4: key.last4,
      revoked_at: key.revokedAt === null ? null : formatTimestamp(key.revokedAt),
    };
  }
}
