/**
 * The import rules of src/ (see docs/architecture.md). Imports run downward: the core, then the
 * database and the scheduler, then the HTTP layer, then the resource modules, then the wiring.
 * test/architecture.test.ts runs these rules and also checks that no two folders import each other.
 */

/** Folders that are layers rather than resources: the HTTP layer, the command line, the dashboard, the typed client. */
const LAYERS = ['http', 'cli', 'dashboard', 'client'];
/** What every resource stands on: the core, the database layer and the scheduler. */
const GROUND = ['core', 'db', 'scheduler'];
/**
 * Every other folder of src/ is a resource, and imports of the ground and of the resources named here
 * alone: a folder not named (a new resource) may import only the ground. Routes run through ports
 * (src/module.ts) where a lower resource needs a higher one, never through an import.
 */
const RESOURCE_IMPORTS = {
  addresses: [],
  accounts: [],
  clock: [],
  config: [],
  embed: [],
  events: [],
  faults: [],
  journal: [],
  scenarios: [],
  rates: ['addresses'],
  shipments: ['addresses', 'events', 'rates'],
  labels: ['addresses', 'events', 'rates', 'scenarios', 'shipments'],
  tracking: ['addresses', 'events', 'labels', 'rates', 'scenarios', 'shipments'],
  webhooks: ['events', 'labels', 'shipments', 'tracking'],
  listeners: ['events', 'webhooks'],
  report: ['journal', 'labels', 'tracking', 'webhooks'],
};
const NOT_RESOURCES = [...LAYERS, ...GROUND];
/** A path under src/ in one of `folders`. */
const under = (folders) => `^src/(${folders.join('|')})/`;
/** A folder of src/ that is a resource: any but the layers and the ground. */
const RESOURCE = `^src/(?!(?:${NOT_RESOURCES.join('|')})/)([^/]+)/`;

/** One rule a resource: it may import its own folder, the ground, and what it declares. */
const resourceRules = Object.entries(RESOURCE_IMPORTS).map(([name, allowed]) => ({
  name: 'resources-import-what-they-declare',
  comment: `${name}/ may import the ground and ${allowed.length ? allowed.join(', ') : 'no other resource'}.`,
  severity: 'error',
  from: { path: `^src/${name}/` },
  to: { path: RESOURCE, pathNot: [`^src/${name}/`, ...(allowed.length ? [under(allowed)] : [])] },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No file may import itself through others.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'core-is-the-ground',
      comment:
        'The core (ids, time, money, paging, errors, the actor) imports no framework and no other folder.',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: ['^src/(?!core/)', '(^|/)node_modules/(hono|@hono)/'] },
    },
    {
      name: 'storage-uses-only-the-core',
      comment: 'The database and the scheduler know nothing of HTTP or of any resource.',
      severity: 'error',
      from: { path: '^src/(db|scheduler)/' },
      to: { path: ['^src/(?!core/|db/|scheduler/)', '(^|/)node_modules/(hono|@hono)/'] },
    },
    {
      name: 'http-uses-only-the-core',
      comment:
        'The HTTP layer (auth, limits, bodies, errors to responses) depends on the core, never on a resource.',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/(?!core/|http/)' },
    },
    {
      name: 'logic-knows-no-framework',
      comment:
        "A resource's logic and stores take no Hono and no HTTP layer: only its routes, middleware and module object do.",
      severity: 'error',
      from: { path: RESOURCE, pathNot: '(routes|sandbox-routes|middleware|module)\\.ts$' },
      to: { path: ['(^|/)node_modules/(hono|@hono)/', '^src/http/'] },
    },
    {
      name: 'new-resources-import-only-the-ground',
      comment: `A resource not named in RESOURCE_IMPORTS imports the ground (${GROUND.join(', ')}) and no other resource.`,
      severity: 'error',
      from: { path: RESOURCE, pathNot: under(Object.keys(RESOURCE_IMPORTS)) },
      to: { path: RESOURCE, pathNot: '^src/$1/' },
    },
    ...resourceRules,
    {
      name: 'only-the-wiring-reads-the-config',
      comment: 'Modules are given the settings they use; the command line and the wiring read the config.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/(main|server|wiring|index|logger)\\.ts$', '^src/config/'] },
      to: { path: '^src/config/' },
    },
    {
      name: 'the-client-stands-alone',
      comment:
        "The typed client (src/client/) runs in merchants' programs: it imports nothing else of src/, and " +
        'of the packages only openapi-fetch.',
      severity: 'error',
      from: { path: '^src/client/' },
      to: {
        path: ['^src/(?!client/)', '(^|/)node_modules/'],
        pathNot: '(^|/)node_modules/openapi-fetch/',
      },
    },
    {
      name: 'the-browser-code-stands-alone',
      comment:
        "The dashboard's browser code (src/dashboard/ui/) runs in a page: it imports nothing of the server, " +
        'and nothing of the server imports it (the build bundles it from its own entries). It may take the ' +
        "API's types from the typed client's two files of types alone (schema.ts, generated from the OpenAPI " +
        'document, and types.ts, which names them): they hold no code, so nothing of them reaches the bundle, ' +
        'and verbatimModuleSyntax makes every import of them a type import.',
      severity: 'error',
      from: { path: '^src/dashboard/ui/' },
      to: { path: '^src/(?!dashboard/ui/|client/(schema|types)\\.ts$)' },
    },
    {
      name: 'the-server-leaves-the-browser-code-alone',
      comment:
        'The server serves the bundle the build made of src/dashboard/ui/; it never imports its files.',
      severity: 'error',
      from: { path: '^src/(?!dashboard/ui/)' },
      to: { path: '^src/dashboard/ui/' },
    },
    {
      name: 'nothing-imports-the-wiring',
      comment: 'The wiring, the server and the command line are the top: nothing below imports them.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(main|server|index)\\.ts$' },
      to: { path: '^src/(wiring|server|main|index)\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};
