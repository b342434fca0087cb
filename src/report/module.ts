import type { SandboxModule } from '../module.js';
import type { ClientObservations } from './observations.js';
import { reportRoutes } from './sandbox-routes.js';
import type { ReportService } from './service.js';

/**
 * The integration report: `GET /_sandbox/report`. No tables of its own: it reads the delivery log and
 * keeps, in memory and bounded per account, what the request journal and the label CDN tell it.
 */
export function reportModule(deps: {
  reports: ReportService;
  observations: ClientObservations;
}): SandboxModule {
  return {
    name: 'report',
    tables: [],
    controls: reportRoutes(deps.reports),
    reset: (accountId) => deps.observations.forget(accountId),
  };
}
