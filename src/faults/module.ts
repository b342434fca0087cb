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
    build({ db, ports, provide }) {
      const store = new FaultStore(db);
      // Over PostgreSQL, where the rules are read each time, whether the caller's account has any is read
      // with its key, so that the requests of an account without rules (almost all) read none.
      if (db.engine === 'postgres') ports.accounts.store.addCallerFact(FAULTS_FACT, ANY_ACTIVE_FAULT);
      provide('faults', { store });
      return { controls: faultRoutes(store), reset: (tx, accountId) => store.deleteAll(accountId, tx) };
    },
  };
}
