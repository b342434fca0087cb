import { RateLimiter } from '../http/rate-limit.js';
import type { SandboxModule } from '../module.js';
import { ACCOUNTS_MIGRATIONS } from './migrations.js';
import { accountCountPrefix, keyCountPrefix } from './plans.js';
import { rateCountsFor } from './rate-windows.js';
import { accountControlRoutes, accountCreationRoutes } from './sandbox-routes.js';
import { AccountService } from './service.js';
import { AccountStore } from './store.js';

declare module '../module.js' {
  interface Ports {
    accounts: { service: AccountService; store: AccountStore; rateLimiter: RateLimiter };
  }
}

/**
 * Accounts and their keys. A reset keeps both (and the account's settings); it forgets the rate
 * limits' counts of the account and of its keys (in memory on SQLite, rows over PostgreSQL). Keys'
 * last-used times are written in the background while the server runs.
 */
export function accountsModule(settings: {
  /** The speed new accounts' clocks start at (`--clock-speed`). */
  clockSpeed: number;
  /** The server's webhook retry ladder (`--webhook-retries`). */
  retryLadder: readonly number[];
  /** False with `--no-rate-limits`. */
  enforceRateLimits: boolean;
  adminToken: string | undefined;
  /** Whether the default account and its published key exist (see offersDefaultAccount). */
  offersDefaultAccount: boolean;
}): SandboxModule {
  return {
    name: 'accounts',
    migrations: ACCOUNTS_MIGRATIONS,
    build({ db, memory, realNow, logger, ports, provide }) {
      const store = new AccountStore(memory);
      const rateCounts = rateCountsFor(db, realNow, logger);
      const rateLimiter = new RateLimiter(rateCounts);
      const service = new AccountService({
        db,
        store,
        clockSpeed: settings.clockSpeed,
        serverRetryLadder: settings.retryLadder,
        serverEnforcesRateLimits: settings.enforceRateLimits,
        offersDefaultAccount: settings.offersDefaultAccount,
        checkScenario: (name, field) => ports.scenarios.catalog.find(name, field),
        realNow,
        logger,
      });
      provide('accounts', { service, store, rateLimiter });
      return {
        openControls: accountCreationRoutes(service, settings.adminToken),
        controls: accountControlRoutes(
          service,
          (accountId) => ports.sandbox.resetAccount(accountId),
          settings.adminToken,
        ),
        async reset(tx, accountId) {
          const keys = await store.keys(tx, accountId);
          await rateCounts.forget(tx, [
            accountCountPrefix(accountId),
            ...keys.map((key) => keyCountPrefix(key.id)),
          ]);
        },
        start: () => service.start(),
        // The server closes the database after this: the last-used times still in memory are written now.
        async close() {
          await service.close();
          await rateCounts
            .close()
            .catch((error: unknown) =>
              logger.warn({ err: error }, 'the last rate-limit counts could not be written'),
            );
        },
      };
    },
  };
}
