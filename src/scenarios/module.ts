import type { SandboxModule } from '../module.js';
import { ScenarioCatalog } from './catalog.js';
import type { Scenario } from './files.js';
import { scenarioRoutes } from './sandbox-routes.js';

declare module '../module.js' {
  interface Ports {
    scenarios: { catalog: ScenarioCatalog };
  }
}

/** Scenario files, read at start (built-in and `--scenarios-dir`); the controls list them. No tables. */
export function scenariosModule(settings: { scenarios: ReadonlyMap<string, Scenario> }): SandboxModule {
  return {
    name: 'scenarios',
    build({ provide }) {
      const catalog = new ScenarioCatalog(settings.scenarios);
      provide('scenarios', { catalog });
      return { controls: scenarioRoutes(catalog) };
    },
  };
}
