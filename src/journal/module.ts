import type { SandboxModule } from '../module.js';
import { MemoryJournal, type RequestJournal } from './journal.js';
import { JOURNAL_MIGRATIONS } from './migrations.js';
import { type JournalNotes, PostgresJournal } from './postgres-journal.js';
import { journalRoutes } from './sandbox-routes.js';
import { addRequestStream } from './stream-routes.js';

declare module '../module.js' {
  interface Ports {
    /** `notes` is the journal's side for the integration report, over PostgreSQL only. */
    journal: { journal: RequestJournal; notes: JournalNotes | undefined };
  }
}

/**
 * The request journal: each account's recent API requests, and their stream. One sandbox keeps it in
 * memory; over PostgreSQL it is a table that every replica writes and reads. Its middleware is a step
 * of the API's prelude.
 */
export function journalModule(): SandboxModule {
  return {
    name: 'journal',
    migrations: JOURNAL_MIGRATIONS,
    build({ db, logger, provide }) {
      const shared = db.engine === 'postgres' ? new PostgresJournal(db, logger) : undefined;
      const journal = shared ?? new MemoryJournal();
      provide('journal', { journal, notes: shared });
      const controls = journalRoutes(journal);
      const endStreams = addRequestStream(controls, journal);
      return {
        controls,
        reset: (tx, accountId) => journal.deleteAccount(tx, accountId),
        close: async () => {
          endStreams();
          await journal.close();
        },
      };
    },
  };
}
