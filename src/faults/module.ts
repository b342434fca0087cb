import type { SandboxModule } from '../module.js';
import { FAULTS_MIGRATIONS } from './migrations.js';
import { faultRoutes } from './sandbox-routes.js';
import { FaultStore } from './store.js';

declare module '../module.js' {
  interface Ports {
    faults: { store: FaultStore };
  }
}

/** Fault rules: their controls here; the middleware that plays them is in the API's prelude. */
export function faultsModule(): SandboxModule {
  return {
    name: 'faults',
    migrations: FAULTS_MIGRATIONS,
    build({ db, provide }) {
      const store = new FaultStore(db);
      provide('faults', { store });
      return { controls: faultRoutes(store), reset: (tx, accountId) => store.deleteAll(accountId, tx) };
    },
  };
}
