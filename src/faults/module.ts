import { CursorCodec } from '../core/paging.js';
import { SettingsStore } from '../db/settings.js';
import type { SandboxModule } from '../module.js';
import { FAULTS_MIGRATIONS } from './migrations.js';
import { faultRoutes } from './sandbox-routes.js';
import { ANY_ACTIVE_FAULT, FaultStore } from './store.js';

declare module '../module.js' {
  interface Ports {
    faults: { store: FaultStore };
  }
}

/** The caller's fact (see the accounts store) that says whether its account has a rule in play. */
export const FAULTS_FACT = 'has_faults';

/** Fault rules: their controls here; the middleware that plays them is in the API's prelude. */
export function faultsModule(): SandboxModule {
  return {
    name: 'faults',
    migrations: FAULTS_MIGRATIONS,
    async build({ db, memory, ports, provide }) {
      const store = new FaultStore(db, memory);
      // Over PostgreSQL, where the rules are read each time while other replicas run, whether the
      // caller's account has any is read with its key, so that the requests of an account without rules
      // (almost all) read none.
      if (db.engine === 'postgres') ports.accounts.store.addCallerFact(FAULTS_FACT, ANY_ACTIVE_FAULT);
      provide('faults', { store });
      // A secret of the list's own, so that no other list's cursor means anything here.
      const cursors = new CursorCodec(await new SettingsStore(db).secret('faults_cursor_signing_secret'));
      return {
        controls: faultRoutes(store, cursors),
        reset: (tx, accountId) => store.deleteAll(accountId, tx),
      };
    },
  };
}
