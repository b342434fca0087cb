import type { SandboxModule } from '../module.js';
import { shipmentRoutes } from './routes.js';
import { shipmentControlRoutes } from './sandbox-routes.js';
import type { ShipmentService } from './service.js';
import type { ShipmentStore } from './store.js';

/**
 * Shipments: their routes under /v1, the dashboard's search under /_sandbox, their table and the
 * counts the list totals come from.
 */
export function shipmentsModule(deps: { shipments: ShipmentService; store: ShipmentStore }): SandboxModule {
  return {
    name: 'shipments',
    tables: ['shipments', 'shipment_counts'],
    api: shipmentRoutes(deps.shipments),
    controls: shipmentControlRoutes(deps.shipments),
    reset: (accountId) => deps.store.deleteAccount(accountId),
  };
}
