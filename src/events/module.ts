import type { z } from '@hono/zod-openapi';
import type { Db } from '../db/database.js';
import type { SandboxModule } from '../module.js';
import { eventRoutes } from './sandbox-routes.js';
import type { EventStore } from './store.js';

/**
 * The event log every change writes to, and the controls that read it and fire test events.
 * `envelope` is how the document describes an event (see eventRoutes).
 */
export function eventsModule(deps: { db: Db; events: EventStore; envelope?: z.ZodType }): SandboxModule {
  return {
    name: 'events',
    tables: ['events'],
    controls: eventRoutes(deps.db, deps.events, deps.envelope),
    reset: (accountId) => deps.events.deleteAccount(accountId),
  };
}
