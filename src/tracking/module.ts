import type { SandboxModule } from '../module.js';
import type { JobHandler } from '../scheduler/scheduler.js';
import { trackingRoutes } from './routes.js';
import { trackingControlRoutes } from './sandbox-routes.js';
import { type StepPayload, TRACKING_STEP, type TrackingService } from './service.js';
import type { TrackingStore } from './store.js';

/** Tracking: the API's tracking route, QA's levers on a parcel, and the scenario steps it schedules. */
export function trackingModule(deps: { tracking: TrackingService; store: TrackingStore }): SandboxModule {
  const { tracking } = deps;
  const step: JobHandler<StepPayload> = (job) => tracking.runScheduledStep(job);
  return {
    name: 'tracking',
    tables: ['tracking_events'],
    api: trackingRoutes(tracking),
    controls: trackingControlRoutes(tracking),
    jobs: { [TRACKING_STEP]: step as JobHandler },
    reset: (accountId) => deps.store.deleteAccount(accountId),
  };
}
