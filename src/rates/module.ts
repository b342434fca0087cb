import type { SandboxModule } from '../module.js';
import { rateRoutes } from './routes.js';
import { rateControlRoutes } from './sandbox-routes.js';

/** Carriers, their rate cards and the rate comparison; pure functions of the fixtures, no tables. */
export function ratesModule(): SandboxModule {
  return { name: 'rates', build: () => ({ api: rateRoutes(), controls: rateControlRoutes() }) };
}
