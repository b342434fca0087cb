import type { SandboxModule } from '../module.js';
import type { RequestJournal } from './journal.js';
import { journalRoutes } from './sandbox-routes.js';

/** The request journal: each account's recent API requests, in memory (no tables). */
export function journalModule(deps: { journal: RequestJournal }): SandboxModule {
  return {
    name: 'journal',
    tables: [],
    controls: journalRoutes(deps.journal),
    reset: (accountId) => deps.journal.forget(accountId),
  };
}
