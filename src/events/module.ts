import type { z } from '@hono/zod-openapi';
import type { SandboxModule } from '../module.js';
import { EVENTS_MIGRATIONS } from './migrations.js';
import { eventRoutes } from './sandbox-routes.js';
import { EventStore } from './store.js';

declare module '../module.js' {
  interface Ports {
    events: { store: EventStore };
  }
}

/**
 * The event log every change writes to, and the controls that read it and fire test events.
 * `envelope` is how the document describes an event (see eventRoutes).
 */
export function eventsModule(settings: { envelope?: z.ZodType } = {}): SandboxModule {
  return {
    name: 'events',
    migrations: EVENTS_MIGRATIONS,
    build({ db, provide }) {
      const store = new EventStore(db);
      provide('events', { store });
      return {
        controls: eventRoutes(db, store, settings.envelope),
        reset: (accountId) => store.deleteAccount(accountId),
      };
    },
  };
}
