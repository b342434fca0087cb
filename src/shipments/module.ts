import { CursorCodec } from '../core/paging.js';
import { SettingsStore } from '../db/settings.js';
import type { SandboxModule } from '../module.js';
import { SHIPMENTS_MIGRATIONS } from './migrations.js';
import { shipmentRoutes } from './routes.js';
import { shipmentControlRoutes } from './sandbox-routes.js';
import { ShipmentService } from './service.js';
import { ShipmentStore } from './store.js';

declare module '../module.js' {
  interface Ports {
    shipments: { service: ShipmentService; store: ShipmentStore };
  }
}

/**
 * Shipments: their routes under /v1, the dashboard's search under /_sandbox, their table and the
 * counts the list totals come from.
 */
export function shipmentsModule(): SandboxModule {
  return {
    name: 'shipments',
    migrations: SHIPMENTS_MIGRATIONS,
    async build({ db, memory, ports, provide }) {
      const store = new ShipmentStore(db);
      const service = new ShipmentService({
        db,
        store,
        events: ports.events.store,
        cursors: new CursorCodec(await new SettingsStore(db).secret('cursor_signing_secret')),
        voidLabelOnCancel: (tx, actor, shipment) => ports.labels.service.voidOnCancel(tx, actor, shipment),
        memory,
      });
      provide('shipments', { service, store });
      return {
        api: shipmentRoutes(service),
        controls: shipmentControlRoutes(service),
        async reset(tx, accountId) {
          await store.deleteAccount(tx, accountId);
          service.forget(accountId);
        },
      };
    },
  };
}
