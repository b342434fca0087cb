import { clockNow } from '../core/clock.js';
import type { SandboxModule } from '../module.js';
import { JOBS_MIGRATIONS } from '../scheduler/migrations.js';
import { clockRoutes } from './sandbox-routes.js';
import { ClockService } from './service.js';

declare module '../module.js' {
  interface Ports {
    clock: {
      service: ClockService;
      /** The instant an account's clock reads now; undefined for no such account. */
      nowOf(accountId: string): Promise<number | undefined>;
    };
  }
}

/**
 * The account clocks' controls and the scheduler's own jobs (their table is this module's). A reset
 * deletes the account's jobs and puts its clock back at real time.
 */
export function clockModule(settings: { initialSpeed: number }): SandboxModule {
  return {
    name: 'clock',
    migrations: JOBS_MIGRATIONS,
    build({ scheduler, realNow, ports, provide }) {
      const clocks = () => ports.accounts.service;
      const service = new ClockService({
        clocks: {
          clockOf: (id) => clocks().clockOf(id),
          saveClock: (id, clock, q) => clocks().saveClock(id, clock, q),
        },
        scheduler,
        realNow,
        initialSpeed: settings.initialSpeed,
      });
      provide('clock', {
        service,
        async nowOf(accountId) {
          const clock = await clocks().clockOf(accountId);
          return clock && clockNow(clock, realNow());
        },
      });
      return {
        controls: clockRoutes(service, scheduler),
        async reset(tx, accountId) {
          await scheduler.deleteAccount(tx, accountId);
          await service.restart(tx, accountId);
        },
      };
    },
  };
}
