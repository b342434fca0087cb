import { z } from 'zod';
import { startClock } from '../clock/clock.js';
import { SCOPES } from '../core/actor.js';
import { readJsonFixture } from '../core/fixtures.js';
import { newId } from '../core/ids.js';
import { newKeyValue } from './keys.js';
import { PLANS, type Plan } from './plans.js';
import type { Account, AccountStore } from './store.js';

const DefaultAccountFixture = z.object({
  id: z.string().startsWith('acct_'),
  name: z.string().min(1),
  plan: z.enum(PLANS),
  api_key: z.object({
    id: z.string().startsWith('key_'),
    name: z.string().min(1),
    value: z.string().startsWith('svc_test_'),
  }),
});

/** The account every fresh sandbox has, with a key fixed in `fixtures/` so CI jobs can hard-code it. */
export const DEFAULT_ACCOUNT = DefaultAccountFixture.parse(readJsonFixture('default-account.json').json);

/** Creates the default account and its key unless they exist; a revoked default key stays revoked. */
export function seedDefaultAccount(store: AccountStore, realNow: number, clockSpeed: number): void {
  const { id, name, plan, api_key } = DEFAULT_ACCOUNT;
  store.insert({
    id,
    name,
    plan,
    createdAt: realNow,
    clock: startClock(realNow, clockSpeed),
    defaultScenario: 'standard',
    webhookRetrySchedule: null,
    rateLimitsEnabled: true,
  });
  store.insertApiKey(
    { id: api_key.id, accountId: id, name: api_key.name, scopes: [...SCOPES], createdAt: realNow },
    api_key.value,
  );
}

/** A fresh, isolated account with one all-scopes key, whose value is returned once. */
export function createAccount(
  store: AccountStore,
  options: { name?: string | undefined; plan?: Plan | undefined },
  realNow: number,
  clockSpeed: number,
): { account: Account; apiKey: string } {
  const id = newId('acct', realNow);
  const account: Account = {
    id,
    name: options.name ?? `Sandbox account ${id.slice(-6)}`,
    plan: options.plan ?? 'growth',
    createdAt: realNow,
    clock: startClock(realNow, clockSpeed),
    defaultScenario: 'standard',
    webhookRetrySchedule: null,
    rateLimitsEnabled: true,
  };
  const apiKey = newKeyValue();
  store.insert(account);
  store.insertApiKey(
    {
      id: newId('key', realNow),
      accountId: id,
      name: 'Default key',
      scopes: [...SCOPES],
      createdAt: realNow,
    },
    apiKey,
  );
  return { account, apiKey };
}
