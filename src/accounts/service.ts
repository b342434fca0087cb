import type { Logger } from 'pino';
import { type Caller, isFullKey, SCOPES } from '../core/actor.js';
import { type ClockState, clockNow, startClock } from '../core/clock.js';
import { RETRY_DELAY_RULE, retryDelayMillis } from '../core/duration.js';
import { ApiError, invalidField, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { formatTimestamp } from '../core/time.js';
import { refuseChangesNeedingAdmin } from './admin-settings.js';
import { DEFAULT_ACCOUNT, refusePublishedKey } from './default-account.js';
import { KeyUsage } from './key-usage.js';
import { keyShape, newKeyValue } from './keys.js';
import { ceilingsFor, type PlanCeiling } from './plans.js';
import type { AccountSettingsInput, CreateAccountInput, CreateKeyInput } from './schema.js';
import type { Account, AccountStore, ApiKeyRecord } from './store.js';

export interface AccountServiceOptions {
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

/** Accounts and their keys: creating them, knowing who calls, and the account's settings. */
export class AccountService {
  private readonly store: AccountStore;
  private readonly realNow: () => number;
  /** Per account object (replaced whenever the account changes), each key's limits. */
  private readonly limits = new WeakMap<Account, Map<string, CallerLimits>>();

  /** When each key was last used, written in the background. */
  private readonly usage: KeyUsage;

  constructor(private readonly options: AccountServiceOptions) {
    this.store = options.store;
    this.realNow = options.realNow;
    this.usage = new KeyUsage((times) => this.store.saveLastUsed(times), options.logger);
  }

  /** Starts writing keys' last-used times in the background. */
  start(): void {
    this.usage.start();
  }

  /** Writes the last-used times still in memory; before the database closes. */
  close(): void {
    this.usage.close();
  }

  /** Creates the default account and its key unless they exist; a revoked default key stays revoked. */
  seedDefaultAccount(): void {
    const { id, name, plan, api_key } = DEFAULT_ACCOUNT;
    const now = this.realNow();
    this.store.insertWithKey(
      this.newAccount(id, name, plan, now),
      { id: api_key.id, name: api_key.name, scopes: [...SCOPES], createdAt: now },
      api_key.value,
    );
  }

  /** A fresh, isolated account with one all-scopes key, whose value is returned once. */
  createAccount(input: CreateAccountInput): { account: Account; apiKey: string } {
    const now = this.realNow();
    const id = newId('acct', now);
    const account = this.newAccount(
      id,
      input.name ?? `Sandbox account ${id.slice(-6)}`,
      input.plan ?? 'growth',
      now,
    );
    const apiKey = newKeyValue();
    this.store.insertWithKey(
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
   * `invalid_api_key` for a malformed, unknown, revoked or live key.
   */
  resolveKey(value: string): Caller {
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
    const found = shape === 'malformed' ? undefined : this.store.findByKey(value);
    if (!found) throw new ApiError(401, 'invalid_api_key', 'The API key is not valid.');
    if (found.key.revokedAt !== null)
      throw new ApiError(401, 'invalid_api_key', 'The API key has been revoked.');

    const now = clockNow(found.account.clock, this.realNow());
    // In memory only: reading never writes (on a full disk every request would fail).
    this.usage.noteUse(found.key.id, now);
    return { accountId: found.account.id, keyId: found.key.id, scopes: found.key.scopes, now };
  }

  /**
   * Whose revoked key this is, for the request journal (a request refused with it is the account's
   * client using a key it should have dropped). Undefined for a key that is valid, unknown or not a
   * test key: those belong to no account, and nothing is kept of them.
   */
  revokedKeyOf(value: string): { accountId: string; keyId: string; now: number } | undefined {
    if (keyShape(value) !== 'test') return undefined;
    const found = this.store.findByKey(value);
    if (!found || found.key.revokedAt === null) return undefined;
    return {
      accountId: found.account.id,
      keyId: found.key.id,
      now: clockNow(found.account.clock, this.realNow()),
    };
  }

  /** The caller's rate limits, worked out once per account state and key. */
  limitsOf(caller: Caller): CallerLimits {
    const account = this.get(caller.accountId);
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

  get(accountId: string): Account {
    const account = this.store.find(accountId);
    if (!account) throw new ApiError(404, 'not_found', `No account '${accountId}'.`);
    return account;
  }

  /** The account's clock, for the clock module and the scheduler. */
  clockOf(accountId: string): ClockState | undefined {
    return this.store.find(accountId)?.clock;
  }

  saveClock(accountId: string, clock: ClockState): void {
    this.store.saveClock(accountId, clock);
  }

  /** The scenario a new label of the account plays. */
  defaultScenarioOf(accountId: string): string {
    return this.store.find(accountId)?.defaultScenario ?? 'standard';
  }

  /** Milliseconds before each webhook retry: the account's own ladder, or the server's. */
  retryLadderOf(accountId: string): readonly number[] {
    return this.store.find(accountId)?.webhookRetrySchedule ?? this.options.serverRetryLadder;
  }

  /** `admin`: the request carries the server's admin token, or the server has none. */
  updateSettings(accountId: string, change: AccountSettingsInput, { admin }: { admin: boolean }): Account {
    const account = this.get(accountId);
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
    this.store.saveSettings(updated);
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

  /** A new key of the caller's account, with at most the caller's own scopes (all of them when not given). */
  createKey(caller: Caller, input: CreateKeyInput) {
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
    this.store.insertApiKey(key, value);
    return { id: key.id, name: key.name, scopes: key.scopes, created_at: formatTimestamp(caller.now), value };
  }

  /** Newest first, revoked ones included, each with its freshest last-used time. */
  keys(accountId: string): ApiKeyRecord[] {
    return this.store.keys(accountId).map((key) => {
      const lastUsedAt = this.usage.lastUsed(key.id);
      return lastUsedAt === undefined ? key : { ...key, lastUsedAt };
    });
  }

  /** Revokes a key of the account at once: any key may revoke itself, only a full key another. */
  revokeKey(caller: Caller, keyId: string): { id: string; revoked_at: string } {
    if (keyId !== caller.keyId && !isFullKey(caller)) {
      throw new ApiError(
        403,
        'insufficient_scope',
        'Only a full API key (all five scopes) can revoke another key; a restricted key can revoke itself.',
      );
    }
    const key = this.store.revokeKey(caller.accountId, keyId, caller.now);
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
