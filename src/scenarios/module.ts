import type { SandboxModule } from '../module.js';
import type { ScenarioCatalog } from './catalog.js';
import { scenarioRoutes } from './sandbox-routes.js';

/** Scenario files, read at start; the controls list them. No tables: they live in files. */
export function scenariosModule(deps: { scenarios: ScenarioCatalog }): SandboxModule {
  return { name: 'scenarios', tables: [], controls: scenarioRoutes(deps.scenarios) };
}
