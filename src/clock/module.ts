import type { SandboxModule } from '../module.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import { clockRoutes } from './sandbox-routes.js';
import type { ClockService } from './service.js';

/**
 * The account clocks' controls and the scheduler's own jobs. A reset deletes the account's jobs and
 * puts its clock back at real time.
 */
export function clockModule(deps: { clock: ClockService; scheduler: Scheduler }): SandboxModule {
  return {
    name: 'clock',
    tables: ['jobs'],
    controls: clockRoutes(deps.clock, deps.scheduler),
    reset(accountId) {
      deps.scheduler.deleteAccount(accountId);
      deps.clock.restart(accountId);
    },
  };
}
