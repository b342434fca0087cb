import type { SandboxModule } from '../module.js';
import { RequestJournal } from './journal.js';
import { journalRoutes } from './sandbox-routes.js';
import { addRequestStream } from './stream-routes.js';

declare module '../module.js' {
  interface Ports {
    journal: { journal: RequestJournal };
  }
}

/**
 * The request journal: each account's recent API requests, in memory (no tables), and their stream.
 * Its middleware is a step of the API's prelude.
 */
export function journalModule(): SandboxModule {
  return {
    name: 'journal',
    build({ provide }) {
      const journal = new RequestJournal();
      provide('journal', { journal });
      const controls = journalRoutes(journal);
      const endStreams = addRequestStream(controls, journal);
      return {
        controls,
        reset: (_tx, accountId) => journal.forget(accountId),
        close: async () => endStreams(),
      };
    },
  };
}
