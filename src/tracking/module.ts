import type { SandboxModule } from '../module.js';
import type { JobKind } from '../scheduler/queue.js';
import { TRACKING_STEP, type TrackingJobPayload } from './chain.js';
import { TRACKING_MIGRATIONS } from './migrations.js';
import { trackingRoutes } from './routes.js';
import { trackingControlRoutes } from './sandbox-routes.js';
import { TrackingService } from './service.js';
import { TrackingStore } from './store.js';

declare module '../module.js' {
  interface Ports {
    tracking: { service: TrackingService; store: TrackingStore };
  }
}

/** Tracking: the API's tracking route, QA's levers on a parcel, and the scenario steps it schedules. */
export function trackingModule(settings: { seed: string }): SandboxModule {
  return {
    name: 'tracking',
    migrations: TRACKING_MIGRATIONS,
    async build({ db, scheduler, logger, ports, provide }) {
      const store = new TrackingStore();
      const service = new TrackingService({
        db,
        store,
        labels: ports.labels.store,
        shipments: ports.shipments.store,
        events: ports.events.store,
        scheduler,
        scenarios: ports.scenarios.catalog,
        defaultScenarioOf: (q, accountId) => ports.accounts.service.defaultScenarioOf(q, accountId),
        seed: settings.seed,
        logger,
      });
      await service.start();
      provide('tracking', { service, store });
      const step: JobKind<TrackingJobPayload> = {
        run: (tx, job) => service.runScheduledStep(tx, job),
        upcoming: (job) => service.upcomingOf(job),
      };
      return {
        api: trackingRoutes(service),
        controls: trackingControlRoutes(service),
        jobs: { [TRACKING_STEP]: step as JobKind },
        reset: (tx, accountId) => store.deleteAccount(tx, accountId),
      };
    },
  };
}
