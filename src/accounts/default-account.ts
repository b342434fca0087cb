import { ApiError } from '../core/errors.js';
import { readJsonFixture } from '../core/fixtures.js';
import { z } from '../core/zod.js';
import { PLANS } from './plans.js';

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

/**
 * The default account's key where the sandbox has no default account (it listens beyond loopback, or
 * has an admin token): refused, also when a data directory from an earlier start on loopback still
 * holds the account, since anyone can read the key. The account's data stays, for its other keys.
 */
export function refusePublishedKey(): ApiError {
  return new ApiError(
    401,
    'invalid_api_key',
    "This is the default account's published key, which works only on a sandbox listening on a loopback " +
      'address without --admin-token. Use a key of an account of your own (POST /_sandbox/accounts).',
  );
}
