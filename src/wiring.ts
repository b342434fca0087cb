import { OpenAPIHono } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { methodNotAllowed } from 'hono/method-not-allowed';
import type { Logger } from 'pino';
import { accountsModule } from './accounts/module.js';
import { AccountService } from './accounts/service.js';
import { AccountStore } from './accounts/store.js';
import { clockModule } from './clock/module.js';
import { ClockService } from './clock/service.js';
import { type Config, webhookTargetsOf } from './config/index.js';
import { clockNow } from './core/clock.js';
import { toJsonText } from './core/json.js';
import { CursorCodec } from './core/paging.js';
import { dashboardModule } from './dashboard/module.js';
import { type Db, transaction } from './db/database.js';
import { SettingsStore } from './db/settings.js';
import { eventsModule } from './events/module.js';
import { sampleEventData } from './events/sample-events.js';
import { EventStore } from './events/store.js';
import { injectFaults } from './faults/middleware.js';
import { faultsModule } from './faults/module.js';
import { FaultStore } from './faults/store.js';
import { authenticate } from './http/auth.js';
import { readBody, requireJsonObjectBody } from './http/body.js';
import type { AppEnv } from './http/context.js';
import { errorHandler, routeNotFound } from './http/errors.js';
import { methodNotAllowed as answerMethodNotAllowed } from './http/methods.js';
import { HEALTH_ROUTE, serveOpenApiDocument } from './http/openapi.js';
import { RateLimiter, rateLimit } from './http/rate-limit.js';
import { requireHttps } from './http/strict-https.js';
import { RequestJournal } from './journal/journal.js';
import { journalRequests } from './journal/middleware.js';
import { journalModule } from './journal/module.js';
import { LabelFiles } from './labels/files.js';
import { labelsModule } from './labels/module.js';
import { createLabelRenderer } from './labels/render/pool.js';
import { LabelService } from './labels/service.js';
import { UrlSigner } from './labels/signed-url.js';
import { LabelStore } from './labels/store.js';
import type { SandboxModule } from './module.js';
import { ratesModule } from './rates/module.js';
import { reportModule } from './report/module.js';
import { ClientObservations } from './report/observations.js';
import { ReportService } from './report/service.js';
import { ScenarioCatalog } from './scenarios/catalog.js';
import type { Scenario } from './scenarios/files.js';
import { scenariosModule } from './scenarios/module.js';
import { Scheduler } from './scheduler/scheduler.js';
import { shipmentsModule } from './shipments/module.js';
import { ShipmentService } from './shipments/service.js';
import { ShipmentStore } from './shipments/store.js';
import { trackingModule } from './tracking/module.js';
import { TrackingService } from './tracking/service.js';
import { TrackingStore } from './tracking/store.js';
import { WebhookDelivery } from './webhooks/delivery.js';
import { DestinationPolicy } from './webhooks/destinations.js';
import { webhooksModule } from './webhooks/module.js';
import { WebhookEventSchema } from './webhooks/payloads.js';
import { webhookDeliveryDocs } from './webhooks/routes.js';
import type { ResolveHost } from './webhooks/send.js';
import { WebhookService } from './webhooks/service.js';
import { WebhookStore } from './webhooks/store.js';

export const API_VERSION_PREFIX = '/v1';

export interface SandboxParts {
  db: Db;
  config: Config;
  logger: Logger;
  /** The scenarios by name: the built-in ones and the user's (`--scenarios-dir`). */
  scenarios: ReadonlyMap<string, Scenario>;
  /** The real wall clock that account clocks are derived from; tests replace it. */
  realNow?: () => number;
  /** Resolves webhook receivers' host names; the system's resolver unless a test makes names resolve to loopback. */
  resolveHost?: ResolveHost;
}

/**
 * The one place where the sandbox is put together: the stores over the database, the services over
 * the stores (each given only what it uses), the list of resource modules, the scheduler and the HTTP
 * app. Nothing imports this file but the server and the tests.
 */
export function createSandbox({
  db,
  config,
  logger,
  scenarios,
  realNow = Date.now,
  resolveHost,
}: SandboxParts) {
  const catalog = new ScenarioCatalog(scenarios);
  const accountStore = new AccountStore(db);
  const accounts = new AccountService({
    store: accountStore,
    clockSpeed: config.clockSpeed,
    serverRetryLadder: config.webhookRetries,
    serverEnforcesRateLimits: !config.noRateLimits,
    checkScenario: (name, field) => catalog.find(name, field),
    realNow,
    logger,
  });
  const nowOf = (accountId: string) => {
    const clock = accounts.clockOf(accountId);
    return clock && clockNow(clock, realNow());
  };
  const scheduler = new Scheduler(db, (accountId) => accounts.clockOf(accountId), logger, realNow);
  const clock = new ClockService({ clocks: accounts, scheduler, realNow, initialSpeed: config.clockSpeed });
  const events = new EventStore(db);
  // What the integration report keeps of the client's behaviour, fed by the journal and the label CDN.
  const observations = new ClientObservations(realNow);

  const shipmentStore = new ShipmentStore(db);
  const shipments: ShipmentService = new ShipmentService({
    db,
    store: shipmentStore,
    events,
    cursors: new CursorCodec(new SettingsStore(db).secret('cursor_signing_secret')),
    voidLabelOnCancel: (actor, shipment) => labels.voidOnCancel(actor, shipment),
  });

  const labelStore = new LabelStore(db);
  const labelFiles = new LabelFiles(createLabelRenderer(config.renderThreads));
  const labels: LabelService = new LabelService({
    db,
    store: labelStore,
    shipments,
    shipmentStore,
    events,
    signer: new UrlSigner(new SettingsStore(db).secret('url_signing_secret')),
    files: labelFiles,
    tracking: {
      start: (actor, label, shipment) => tracking.startDefault(actor, label, shipment),
      stop: (actor, labelId) => tracking.stop(actor, labelId),
    },
    nowOf,
    noteUrlFetch: (fetch) => observations.noteLabelUrl(fetch),
  });

  const trackingStore = new TrackingStore(db);
  const tracking: TrackingService = new TrackingService({
    db,
    store: trackingStore,
    labels: labelStore,
    shipments: shipmentStore,
    events,
    scheduler,
    scenarios: catalog,
    defaultScenarioOf: (accountId) => accounts.defaultScenarioOf(accountId),
    seed: config.seed,
    logger,
  });

  const webhookStore = new WebhookStore(db);
  const destinations = new DestinationPolicy({
    targets: webhookTargetsOf(config),
    allowHosts: config.webhookAllowHosts,
  });
  const webhooks = new WebhookService({
    db,
    store: webhookStore,
    urlRules: { destinations, allowHttp: config.allowHttpWebhooks },
  });
  const delivery = new WebhookDelivery({
    db,
    store: webhookStore,
    scheduler,
    eventBody: (eventId) => events.body(eventId),
    retryLadderOf: (accountId) => accounts.retryLadderOf(accountId),
    timeoutMs: config.webhookTimeoutMs,
    destinations,
    resolve: resolveHost,
    recordTestEvent: (accountId, type, now) =>
      events.record(accountId, type, toJsonText(sampleEventData(type, now)), now, { announce: false }),
    realNow,
    logger,
  });
  // The outbox: every event's deliveries are written in the transaction that records it.
  events.subscribe((event) => delivery.fanOut(event));

  const faults = new FaultStore(db);
  const journal = new RequestJournal();
  journal.observe((accountId, request) => observations.noteRequest(accountId, request));
  const rateLimiter = new RateLimiter();
  const reports = new ReportService({
    observations,
    recentAttempts: (accountId, limit) => webhookStore.recentAttempts(accountId, limit),
    webhookTimeoutMs: config.webhookTimeoutMs,
    realNow,
  });

  /** Lower modules first: a module's reset runs before those of the modules it uses. */
  const modules: SandboxModule[] = [
    accountsModule({ accounts, rateLimiter, adminToken: config.adminToken, resetAccount }),
    clockModule({ clock, scheduler }),
    eventsModule({ db, events, envelope: WebhookEventSchema }),
    scenariosModule({ scenarios: catalog }),
    ratesModule(),
    shipmentsModule({ shipments, store: shipmentStore }),
    labelsModule({ labels, store: labelStore, files: labelFiles, cdnUrl: config.cdnUrl }),
    trackingModule({ tracking, store: trackingStore }),
    webhooksModule({ webhooks, delivery, store: webhookStore }),
    faultsModule({ faults }),
    journalModule({ journal }),
    reportModule({ reports, observations }),
    dashboardModule(),
  ];

  for (const module of modules) {
    for (const [kind, handler] of Object.entries(module.jobs ?? {})) scheduler.register(kind, handler);
    for (const queue of module.queues ?? []) scheduler.addQueue(queue);
  }

  /**
   * `POST /_sandbox/reset`: the account as if new (no shipments, labels, events, webhooks, deliveries,
   * faults or e-mails, its clock back at real time) but with its keys, plan and settings. Each module
   * clears what it owns, dependents first, in one transaction; other accounts are untouched.
   */
  function resetAccount(accountId: string): void {
    transaction(db, () => {
      for (const module of [...modules].reverse()) module.reset?.(accountId);
    });
  }

  accounts.seedDefaultAccount();

  const app = new OpenAPIHono<AppEnv>();
  app.onError(errorHandler(logger));
  app.notFound(routeNotFound);
  // Checked once: a middleware that only decides not to log still costs every request a step (the
  // benchmark runs at `warn` for that reason).
  if (logger.isLevelEnabled('info')) app.use(logRequests(logger));
  // Outside the 405 below, so that the journal notes the answer the client got.
  app.use(
    `${API_VERSION_PREFIX}/*`,
    journalRequests(journal, { realNow, revokedKeyOf: (key) => accounts.revokedKeyOf(key) }),
  );
  app.use(methodNotAllowed({ app, onMethodNotAllowed: answerMethodNotAllowed }));

  app.openapi(HEALTH_ROUTE, (c) => c.json({ status: 'ok' as const }, 200));

  const auth = authenticate((key) => accounts.resolveKey(key));
  // Order matters: strict HTTPS first, and only in strict mode (every step is a step of every
  // request); the body is read next (an oversized one is refused before anything else), then who is
  // calling, the limits count the request, faults may take it over, and only then is the body checked
  // for its route. Paths under the prefix that no route takes pass the same steps.
  app.use(
    `${API_VERSION_PREFIX}/*`,
    ...(config.strictHttps ? [requireHttps(config)] : []),
    readBody,
    auth,
    rateLimit(rateLimiter, (caller) => accounts.limitsOf(caller), realNow),
    injectFaults(faults),
    requireJsonObjectBody,
  );
  app.use('/_sandbox/*', readBody);
  // Controls that take no key are mounted before the key is checked: they check what they need.
  for (const module of modules) if (module.openControls) app.route('/_sandbox', module.openControls);
  app.use('/_sandbox/*', auth, requireJsonObjectBody);

  for (const module of modules) {
    if (module.api) app.route(API_VERSION_PREFIX, module.api);
    if (module.controls) app.route('/_sandbox', module.controls);
    for (const [path, router] of Object.entries(module.mounts ?? {})) app.route(path, router);
  }

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
        '`417 expectation_failed` or `431 headers_too_large`.',
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
    db,
    modules,
    scheduler,
    /** For the server's banner and for tests that reach below the API. */
    services: { accounts, clock, shipments, labels, tracking, webhooks, delivery },
    stores: {
      accounts: accountStore,
      events,
      labels: labelStore,
      shipments: shipmentStore,
      webhooks: webhookStore,
    },
    labelFiles,
    resetAccount,
    /** Resumes interrupted work and starts the scheduler; everything overdue runs before it resolves. */
    async start(): Promise<void> {
      for (const module of modules) module.start?.();
      await scheduler.start();
    },
    /** Stops the scheduler and what the modules run; the caller closes the database. */
    /**
     * Stops the scheduler and what the modules run; the caller closes the database. Webhook sends on
     * the wire may finish until `deadline` (`performance.now()` milliseconds), then are cut off (and
     * sent again after the next start): an advance waiting on them ends then, and so does the
     * scheduler's stop.
     */
    async stop(deadline = performance.now()): Promise<void> {
      await Promise.all([scheduler.stop(), ...modules.map((module) => module.close?.(deadline))]);
    },
  };
}

export type Sandbox = ReturnType<typeof createSandbox>;
export type App = Sandbox['app'];

/**
 * One line a request at `info`: what was asked, the answer, how long it took, and for which account.
 * A client that left before its request was read (499) got no answer: that line is `debug`.
 */
function logRequests(logger: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    await next();
    const duration_ms = Math.round((performance.now() - started) * 10) / 10;
    logger[c.res.status === 499 ? 'debug' : 'info'](
      {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        duration_ms,
        account: c.get('caller')?.accountId,
      },
      'request',
    );
  };
}
