import type { SandboxModule } from '../module.js';
import { faultRoutes } from './sandbox-routes.js';
import type { FaultStore } from './store.js';

/** Fault injection: the rules under /_sandbox/faults (the middleware that plays them is mounted by the wiring). */
export function faultsModule(deps: { faults: FaultStore }): SandboxModule {
  return {
    name: 'faults',
    tables: ['faults'],
    controls: faultRoutes(deps.faults),
    reset: (accountId) => deps.faults.deleteAll(accountId),
  };
}
