import type { RateLimiter } from '../http/rate-limit.js';
import type { SandboxModule } from '../module.js';
import { accountCountPrefix, keyCountPrefix } from './plans.js';
import { accountControlRoutes, accountCreationRoutes } from './sandbox-routes.js';
import type { AccountService } from './service.js';

/**
 * Accounts and their keys. A reset keeps both (and the account's settings); it forgets the rate
 * limiter's counts of the account and of its keys. Keys' last-used times are written in the
 * background while the server runs.
 */
export function accountsModule(deps: {
  accounts: AccountService;
  rateLimiter: RateLimiter;
  adminToken: string | undefined;
  resetAccount: (accountId: string) => void;
}): SandboxModule {
  const { accounts, rateLimiter } = deps;
  return {
    name: 'accounts',
    tables: ['accounts', 'api_keys'],
    openControls: accountCreationRoutes(accounts, deps.adminToken),
    controls: accountControlRoutes(accounts, deps.resetAccount),
    reset(accountId) {
      rateLimiter.forget([
        accountCountPrefix(accountId),
        ...accounts.keys(accountId).map((key) => keyCountPrefix(key.id)),
      ]);
    },
    start: () => accounts.start(),
    // The server closes the database after this: the last-used times still in memory are written now.
    close: async () => accounts.close(),
  };
}
