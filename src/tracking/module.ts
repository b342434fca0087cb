import type { SandboxModule } from '../module.js';
import type { JobKind } from '../scheduler/queue.js';
import { TRACKING_STEP, type TrackingJobPayload } from './chain.js';
import { trackingRoutes } from './routes.js';
import { trackingControlRoutes } from './sandbox-routes.js';
import type { TrackingService } from './service.js';
import type { TrackingStore } from './store.js';

/** Tracking: the API's tracking route, QA's levers on a parcel, and the scenario steps it schedules. */
export function trackingModule(deps: { tracking: TrackingService; store: TrackingStore }): SandboxModule {
  const { tracking } = deps;
  const step: JobKind<TrackingJobPayload> = {
    run: (job) => tracking.runScheduledStep(job),
    upcoming: (job) => tracking.upcomingOf(job),
  };
  return {
    name: 'tracking',
    tables: ['tracking_events', 'tracking_plans'],
    api: trackingRoutes(tracking),
    controls: trackingControlRoutes(tracking),
    jobs: { [TRACKING_STEP]: step as JobKind },
    reset: (accountId) => deps.store.deleteAccount(accountId),
  };
}
