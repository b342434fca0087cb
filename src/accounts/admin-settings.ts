import { ApiError } from '../core/errors.js';
import type { AccountSettingsInput } from './schema.js';
import type { Account } from './store.js';

/**
 * On a sandbox with an admin token, what an account may cost the server is the admin's to decide: a
 * tenant cannot move itself to `enterprise` or switch its own rate limits off. Other settings, and
 * the same values again, stay the account's own.
 */
export function refuseChangesNeedingAdmin(account: Account, change: AccountSettingsInput): void {
  const changed = [
    ...(change.plan !== undefined && change.plan !== account.plan ? ['plan'] : []),
    ...(change.rate_limits !== undefined && change.rate_limits !== account.rateLimitsEnabled
      ? ['rate_limits']
      : []),
  ];
  if (changed.length === 0) return;
  throw new ApiError(
    403,
    'admin_token_required',
    `Changing ${changed.map((name) => `'${name}'`).join(' or ')} on this sandbox needs its admin token: send ` +
      "X-Sandbox-Admin-Token: <token> beside the account's key.",
    changed.length === 1 ? { field: changed[0] as string } : {},
  );
}
