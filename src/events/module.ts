import type { Db } from '../db/database.js';
import type { SandboxModule } from '../module.js';
import { eventRoutes } from './sandbox-routes.js';
import type { EventStore } from './store.js';

/** The event log every change writes to, and the controls that read it and fire test events. */
export function eventsModule(deps: { db: Db; events: EventStore }): SandboxModule {
  return {
    name: 'events',
    tables: ['events'],
    controls: eventRoutes(deps.db, deps.events),
    reset: (accountId) => deps.events.deleteAccount(accountId),
  };
}
