import { OpenAPIHono } from '@hono/zod-openapi';
import { Hono, type MiddlewareHandler } from 'hono';
import { methodNotAllowed } from 'hono/method-not-allowed';
import type { Logger } from 'pino';
import { accountsModule } from './accounts/module.js';
import { clockModule } from './clock/module.js';
import { type Config, listensOnLoopback, offersDefaultAccount, webhookTargetsOf } from './config/index.js';
import { SANDBOX_VERSION } from './core/version.js';
import { dashboardModule } from './dashboard/module.js';
import { type OwnedTables, SETTINGS } from './db/migrations.js';
import type { SandboxDatabase } from './db/sql.js';
import { eventsModule } from './events/module.js';
import { injectFaults } from './faults/middleware.js';
import { FAULTS_FACT, faultsModule } from './faults/module.js';
import { answerHeaders } from './http/answer-headers.js';
import { authenticate } from './http/auth.js';
import { readRequest, requireJsonObjectBody } from './http/body.js';
import { guardAgainstPages } from './http/browsers.js';
import type { AppEnv } from './http/context.js';
import { errorHandler, routeNotFound } from './http/errors.js';
import { methodNotAllowed as answerMethodNotAllowed } from './http/methods.js';
import { HEALTH_ROUTE, HEALTH_TIMEOUT_MS, serveOpenApiDocument } from './http/openapi.js';
import { rateLimit } from './http/rate-limit.js';
import { requireHttps } from './http/strict-https.js';
import { journalRequests } from './journal/middleware.js';
import { journalModule } from './journal/module.js';
import { labelsModule } from './labels/module.js';
import { listenersModule } from './listeners/module.js';
import type { ListenerTiming } from './listeners/service.js';
import { SandboxMetrics } from './metrics/metrics.js';
import { countRequests } from './metrics/middleware.js';
import { metricsRoutes } from './metrics/routes.js';
import type { ModuleContext, ModuleParts, Ports, SandboxModule } from './module.js';
import { ratesModule } from './rates/module.js';
import { reportModule } from './report/module.js';
import type { Scenario } from './scenarios/files.js';
import { scenariosModule } from './scenarios/module.js';
import { REPLICA_TABLES, ReplicaPresence, replicaIdOf } from './scheduler/replicas.js';
import { Scheduler } from './scheduler/scheduler.js';
import { shipmentsModule } from './shipments/module.js';
import { trackingModule } from './tracking/module.js';
import { webhooksModule } from './webhooks/module.js';
import { WebhookEventSchema } from './webhooks/payloads.js';
import { webhookDeliveryDocs } from './webhooks/routes.js';
import type { ResolveHost } from './webhooks/send.js';

export const API_VERSION_PREFIX = '/v1';
/**
 * Where the API reference's "Try it out" (`/docs`) sends its requests: the `/v1` routes themselves,
 * mounted once more under `/_sandbox`, as the twins of `http/twin.ts` are, so that a person trying the
 * API out is not taken for the merchant's client (see `tryItOut` below).
 */
export const TRY_IT_OUT_PREFIX = '/_sandbox/try';

/**
 * Every `/v1` route again, for "Try it out": the same handlers behind the same key, scope and body
 * checks (the `/_sandbox/*` ones), but outside the rate limits, the request journal, the integration
 * report and the fault rules, which belong to the merchant's client. A plain Hono app, so that the
 * routes are not written into the OpenAPI document twice.
 */
function tryItOut(modules: readonly ModuleParts[]): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  for (const module of modules) if (module.api) routes.route(API_VERSION_PREFIX, module.api);
  return routes;
}

export interface SandboxParts {
  /** Where everything is kept: SQLite (a file, or memory) or PostgreSQL. */
  database: SandboxDatabase;
  config: Config;
  logger: Logger;
  /** The scenarios by name: the built-in ones and the user's (`--scenarios-dir`). */
  scenarios: ReadonlyMap<string, Scenario>;
  /** The real wall clock that account clocks are derived from; tests replace it. */
  realNow?: () => number;
  /** Resolves webhook receivers' host names; the system's resolver unless a test makes names resolve to loopback. */
  resolveHost?: ResolveHost;
  /** Shorter listen heartbeats and grace, for tests. */
  listenerTiming?: Partial<ListenerTiming>;
}

/**
 * The resource modules, lower ones first: their tables are made in this order, and a module's reset
 * runs after those of the modules that use it. Each gets the settings it uses.
 */
function sandboxModules({
  config,
  scenarios,
  resolveHost,
  listenerTiming,
}: Pick<SandboxParts, 'config' | 'scenarios' | 'resolveHost' | 'listenerTiming'>): SandboxModule[] {
  return [
    accountsModule({
      clockSpeed: config.clockSpeed,
      retryLadder: config.webhookRetries,
      enforceRateLimits: !config.noRateLimits,
      adminToken: config.adminToken,
      offersDefaultAccount: offersDefaultAccount(config),
    }),
    clockModule({ initialSpeed: config.clockSpeed }),
    eventsModule({ envelope: WebhookEventSchema }),
    scenariosModule({ scenarios }),
    ratesModule(),
    shipmentsModule(),
    labelsModule({ cdnUrl: config.cdnUrl, renderThreads: config.renderThreads }),
    trackingModule({ seed: config.seed }),
    webhooksModule({
      targets: webhookTargetsOf(config),
      allowHosts: config.webhookAllowHosts,
      allowHttp: config.allowHttpWebhooks,
      timeoutMs: config.webhookTimeoutMs,
      resolveHost,
    }),
    listenersModule({ timeoutMs: config.webhookTimeoutMs, timing: listenerTiming }),
    faultsModule(),
    journalModule(),
    reportModule({ webhookTimeoutMs: config.webhookTimeoutMs }),
    dashboardModule(),
  ];
}

/** Each owner's tables and their migrations, in the order they are made: the database layer's, then the modules'. */
function schemaOf(modules: readonly SandboxModule[]): OwnedTables[] {
  return [
    SETTINGS,
    REPLICA_TABLES,
    ...modules.flatMap(({ name, migrations }) => (migrations ? [{ name, migrations }] : [])),
  ];
}

/** The sandbox's tables, for tools and tests that open its database without serving it. */
export const sandboxSchema = (config: Config): OwnedTables[] =>
  schemaOf(sandboxModules({ config, scenarios: new Map() }));

/**
 * The one place where the sandbox is put together: the modules, built in order from one context
 * (the database, the scheduler, the clock, and the ports through which they use one another), the
 * API's prelude from the few ports it needs, and the HTTP app. Nothing imports this file but the
 * server and the tests.
 */
export async function createSandbox(parts: SandboxParts) {
  const { database, config, logger, realNow = Date.now } = parts;
  const db = database.sql;
  const definitions = sandboxModules(parts);
  const schema = schemaOf(definitions);
  await database.migrate(schema);

  const ports = {} as Ports;
  const metrics = new SandboxMetrics({
    version: SANDBOX_VERSION,
    engine: database.engine,
    replica: config.replicaId,
    connections: () => database.connections(),
    keepsReads: () => database.memory.granted,
  });
  // Over PostgreSQL other replicas may share the database: this one says it is alive, and holds
  // accounts and sends for as long as it does.
  const presence =
    database.engine === 'postgres'
      ? new ReplicaPresence(db, replicaIdOf(config.replicaId), config.replicaLeaseMs, logger)
      : undefined;
  await presence?.start();
  const scheduler = new Scheduler(
    db,
    (accountId) => ports.accounts.service.clockOf(accountId),
    logger,
    realNow,
    presence,
    metrics,
  );
  const context: ModuleContext = {
    db,
    memory: database.memory,
    scheduler,
    logger,
    metrics,
    realNow,
    ports,
    provide: (name, port) => {
      ports[name] = port;
    },
  };
  context.provide('sandbox', { resetAccount });
  const modules: (ModuleParts & { name: string })[] = [];
  for (const definition of definitions)
    modules.push({ name: definition.name, ...(await definition.build(context)) });

  for (const module of modules) {
    for (const [kind, handler] of Object.entries(module.jobs ?? {})) scheduler.register(kind, handler);
    for (const queue of module.queues ?? []) scheduler.addQueue(queue);
  }

  /**
   * `POST /_sandbox/reset`: the account as if new (no shipments, labels, events, webhooks, deliveries,
   * faults or e-mails, its clock back at real time) but with its keys, plan and settings. Each module
   * clears what it owns, dependents first, in one transaction; other accounts are untouched. It
   * takes the account's turn, as a clock advance and the background timer do (on every replica): a
   * reset deleting the jobs an advance is running would deadlock with it in PostgreSQL.
   */
  function resetAccount(accountId: string): Promise<void> {
    return scheduler.withAccountLock(accountId, () =>
      db.transaction(async (tx) => {
        for (const module of [...modules].reverse()) await module.reset?.(tx, accountId);
      }),
    );
  }

  const accounts = ports.accounts.service;
  if (offersDefaultAccount(config)) await accounts.seedDefaultAccount();

  const app = new OpenAPIHono<AppEnv>();
  app.onError(errorHandler(logger));
  app.notFound(routeNotFound);
  app.use(countRequests(metrics));
  // Checked once: a middleware that only decides not to log still costs every request a step (the
  // benchmark runs at `warn` for that reason).
  if (logger.isLevelEnabled('info')) app.use(logRequests(logger));
  // Before anything reads the request: what web pages may ask of the sandbox through a browser.
  app.use(answerHeaders());
  app.use(guardAgainstPages(listensOnLoopback(config) ? config.allowedHosts : undefined));
  // Outside the 405 below, so that the journal notes the answer the client got.
  app.use(
    `${API_VERSION_PREFIX}/*`,
    journalRequests(ports.journal.journal, { realNow, revokedKeyOf: (key) => accounts.revokedKeyOf(key) }),
  );
  app.use(methodNotAllowed({ app, onMethodNotAllowed: answerMethodNotAllowed }));

  app.openapi(HEALTH_ROUTE, async (c) =>
    (await database.ping(HEALTH_TIMEOUT_MS))
      ? c.json({ status: 'ok' as const, database: database.engine }, 200)
      : c.json({ status: 'unavailable' as const, database: database.engine }, 503, { 'Retry-After': '5' }),
  );
  app.route('/', metricsRoutes(metrics, config.adminToken));

  const auth = authenticate((key) => accounts.resolveKey(key));
  // Order matters: strict HTTPS first, and only in strict mode (every step is a step of every
  // request); the body is read next (an oversized one is refused before anything else), then who is
  // calling, the limits count the request, faults may take it over, and only then is the body checked
  // for its route. Paths under the prefix that no route takes pass the same steps.
  app.use(
    `${API_VERSION_PREFIX}/*`,
    ...(config.strictHttps ? [requireHttps(config)] : []),
    readRequest,
    auth,
    rateLimit(ports.accounts.rateLimiter, (caller) => accounts.limitsOf(caller), realNow),
    // A caller's fact is read with its key, which is kept in memory while the permit lasts: the
    // store's own rules, kept and dropped at every change, answer then.
    injectFaults(
      ports.faults.store,
      (caller) => database.memory.granted || accounts.factOf(caller, FAULTS_FACT) !== false,
    ),
    requireJsonObjectBody,
  );
  // "Try it out" is the API itself: strict HTTPS holds there as on `/v1`, before the body is read.
  if (config.strictHttps) app.use(`${TRY_IT_OUT_PREFIX}/*`, requireHttps(config));
  app.use('/_sandbox/*', readRequest);
  // Controls that take no key are mounted before the key is checked: they check what they need.
  for (const module of modules) if (module.openControls) app.route('/_sandbox', module.openControls);
  app.use('/_sandbox/*', auth, requireJsonObjectBody);

  for (const module of modules) {
    if (module.api) app.route(API_VERSION_PREFIX, module.api);
    if (module.controls) app.route('/_sandbox', module.controls);
    for (const [path, router] of Object.entries(module.mounts ?? {})) app.route(path, router);
  }
  app.route(TRY_IT_OUT_PREFIX, tryItOut(modules));

  serveOpenApiDocument(app, {
    apiPrefix: API_VERSION_PREFIX,
    info: {
      title: 'Shipping Sandbox',
      version: '1.0.0',
      description:
        'A high-fidelity sandbox of the shipping API. The API of the specification is at `servers` (`…/v1`), ' +
        "its paths written relative to it; `/_sandbox` holds the sandbox's own controls (accounts, clock, " +
        'events, faults), `/cdn` serves pre-signed label URLs. Every error is `{"error": {"code", "message", ' +
        '"field"?}}`; each response names the codes it can carry. A request refused before it reaches a ' +
        "route (by Node's HTTP parser) gets `400 invalid_request`, `408 request_timeout`, " +
        '`417 expectation_failed` or `431 headers_too_large`; plain HTTP sent to the HTTPS port gets ' +
        '`400 https_port_needs_tls`.',
    },
    tags: [
      { name: 'Shipments', description: 'Create, rate, list and cancel shipments' },
      { name: 'Labels', description: 'Generate, download and void labels' },
      { name: 'Rates', description: "Compare carriers' rates" },
      { name: 'Tracking', description: 'Track parcels by tracking number' },
      { name: 'Webhooks', description: 'Register webhooks; the deliveries themselves are under `webhooks`' },
      { name: 'CDN', description: 'Pre-signed label URLs, which need no key' },
      {
        name: 'Sandbox controls',
        description: "The sandbox's own controls: accounts, keys, the clock, events, faults, tracking levers",
      },
    ],
    webhooks: webhookDeliveryDocs(),
  });

  return {
    app,
    database,
    db,
    modules,
    /** Each owner's tables and their migrations, in the order they are made. */
    schema,
    scheduler,
    ports,
    /** For the server's banner and for tests that reach below the API. */
    services: {
      accounts,
      clock: ports.clock.service,
      shipments: ports.shipments.service,
      labels: ports.labels.service,
      tracking: ports.tracking.service,
      webhooks: ports.webhooks.service,
      delivery: ports.webhooks.delivery,
    },
    stores: {
      accounts: ports.accounts.store,
      events: ports.events.store,
      labels: ports.labels.store,
      shipments: ports.shipments.store,
      webhooks: ports.webhooks.store,
      attempts: ports.webhooks.attempts,
    },
    labelFiles: ports.labels.files,
    resetAccount,
    /** Resumes interrupted work and starts the scheduler; everything overdue runs before it resolves. */
    async start(): Promise<void> {
      for (const module of modules) await module.start?.();
      await scheduler.start();
    },
    /**
     * Stops the scheduler and what the modules run; the caller closes the database. Webhook sends on
     * the wire may finish until `deadline` (`performance.now()` milliseconds), then are cut off (and
     * sent again after the next start): an advance waiting on them ends then, and so does the
     * scheduler's stop.
     */
    async stop(deadline = performance.now()): Promise<void> {
      await Promise.all([scheduler.stop(), ...modules.map((module) => module.close?.(deadline))]);
      // Last: sends cut off above are the other replicas' to take over, at once.
      await presence?.stop();
    },
  };
}

export type Sandbox = Awaited<ReturnType<typeof createSandbox>>;
export type App = Sandbox['app'];

/**
 * One line a request at `info`: what was asked, the answer (with an error's code and field), how long
 * it took, and for which account. A client that left before its request was read (499) got no answer:
 * that line is `debug`.
 */
function logRequests(logger: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    await next();
    const duration_ms = Math.round((performance.now() - started) * 10) / 10;
    // The error answered is at hand (see respondWithError): its body is never read again.
    const error = c.get('answeredError');
    logger[c.res.status === 499 ? 'debug' : 'info'](
      {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        duration_ms,
        code: error?.code,
        field: error?.field,
        account: c.get('caller')?.accountId,
      },
      'request',
    );
  };
}
