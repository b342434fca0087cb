import { OpenAPIHono } from '@hono/zod-openapi';
import { Scalar } from '@scalar/hono-api-reference';
import type { MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import { injectFaults } from './faults/middleware.js';
import { authenticate, requireAdminToken } from './http/auth.js';
import { limitBodySize, requireJsonObjectBody } from './http/body.js';
import type { AppEnv } from './http/context.js';
import { errorHandler, routeNotFound } from './http/error-handler.js';
import { rateLimit } from './http/rate-limit.js';
import { requireHttps } from './http/strict-https.js';
import { journalRequests } from './journal/journal.js';
import { cdnRoutes, labelRoutes } from './labels/routes.js';
import { rateRoutes } from './rates/routes.js';
import { accountControlRoutes } from './sandbox/account-routes.js';
import { sandboxRoutes } from './sandbox/routes.js';
import { trackingControlRoutes } from './sandbox/tracking-routes.js';
import { webhookControlRoutes } from './sandbox/webhook-routes.js';
import { shipmentRoutes } from './shipments/routes.js';
import type { State } from './state.js';
import { trackingRoutes } from './tracking/routes.js';
import { webhookRoutes } from './webhooks/routes.js';

export const API_VERSION_PREFIX = '/v1';

/** The one place where middleware and routers are wired together. */
export function createApp(state: State) {
  const { logger, realNow } = state;
  const app = new OpenAPIHono<AppEnv>();
  app.onError(errorHandler(logger));
  app.notFound(routeNotFound);
  // Checked once: a middleware that only decides not to log still costs every request a step.
  if (logger.isLevelEnabled('debug')) app.use('*', logRequests(logger));

  app.get('/healthz', (c) => c.json({ status: 'ok' }));

  const auth = authenticate(state.accounts, realNow);
  // Mounted only in strict mode: every middleware is a step of every request.
  if (state.config.strictHttps) app.use('/v1/*', requireHttps(state.config));
  // Order matters: who is calling, then the journal sees every outcome after that, then the limits
  // count the request, then faults may take it over, and only then is the body read.
  app.use(
    '/v1/*',
    limitBodySize,
    auth,
    journalRequests(state.journal),
    rateLimit(state.rateLimiter, !state.config.noRateLimits),
    injectFaults(state.faults),
    requireJsonObjectBody,
  );
  const adminOnly = requireAdminToken(state.config.adminToken);
  app.use('/_sandbox/*', limitBodySize, (c, next) =>
    c.req.method === 'POST' && c.req.path === '/_sandbox/accounts' ? adminOnly(c, next) : auth(c, next),
  );
  app.use('/_sandbox/*', requireJsonObjectBody);

  app.route(API_VERSION_PREFIX, shipmentRoutes(state));
  app.route(API_VERSION_PREFIX, labelRoutes(state));
  app.route(API_VERSION_PREFIX, rateRoutes(state));
  app.route(API_VERSION_PREFIX, trackingRoutes(state));
  app.route(API_VERSION_PREFIX, webhookRoutes(state));
  app.route('/cdn', cdnRoutes(state, realNow));
  app.route('/_sandbox', sandboxRoutes(state));
  app.route('/_sandbox', trackingControlRoutes(state));
  app.route('/_sandbox', webhookControlRoutes(state));
  app.route('/_sandbox', accountControlRoutes(state));

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'A test key: `Authorization: Bearer svc_test_…`',
  });
  app.doc31('/openapi.json', (c) => ({
    openapi: '3.1.0',
    info: {
      title: 'Shipping Sandbox',
      version: '1.0.0',
      description:
        'A high-fidelity sandbox of the shipping API. `/v1` is the API of the specification; `/_sandbox` holds the ' +
        "sandbox's own controls (accounts, clock, events).",
    },
    servers: [{ url: new URL(c.req.url).origin }],
  }));
  app.get('/docs', Scalar({ url: '/openapi.json', pageTitle: 'Shipping Sandbox API' }));

  return app;
}

export type App = ReturnType<typeof createApp>;

function logRequests(logger: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    await next();
    const ms = Math.round((performance.now() - started) * 10) / 10;
    logger.debug({ method: c.req.method, path: c.req.path, status: c.res.status, ms }, 'request');
  };
}
