import { createRoute, z } from '@hono/zod-openapi';
import { requireAdminToken } from '../http/auth.js';
import { SERVICE_TAG } from '../http/openapi.js';
import { createRouter, openErrors, type Router } from '../http/router.js';
import type { SandboxMetrics } from './metrics.js';

/**
 * `GET /metrics`: the sandbox's metrics for Prometheus. No API key: they are the operator's, and hold
 * no tenant's data (no account, key, id or URL). Open like `/healthz` where the sandbox is one
 * developer's; on a shared deployment, which has an admin token, it takes that token as a Bearer token
 * (Prometheus' `authorization` scrape setting sends it). Outside `/v1`: no rate limit, request journal
 * or integration report sees it.
 */
export function metricsRoutes(metrics: SandboxMetrics, adminToken: string | undefined): Router {
  const router = createRouter();
  router.openapi(
    createRoute({
      method: 'get',
      path: '/metrics',
      operationId: 'getMetrics',
      tags: [SERVICE_TAG],
      summary: "The sandbox's metrics, in Prometheus' text format",
      description:
        'Requests by route template and status with their latency, webhook attempts by outcome, how late ' +
        "scheduled work starts, the database's connections, `sandbox_info{version, engine, replica}` and " +
        "the process's own metrics (`process_*`, `nodejs_*`). No API key; on a sandbox with `--admin-token` " +
        'it takes that token as a Bearer token (`401 missing_api_key` / `invalid_api_key` without it).',
      // No API key: open, or the server's admin token as a Bearer token when it has one.
      security: [],
      middleware: [requireAdminToken(adminToken, 'Reading /metrics')] as const,
      responses: {
        200: {
          description: 'The metrics (Prometheus text exposition format 0.0.4)',
          content: { 'text/plain; version=0.0.4': { schema: z.string() } },
        },
        ...openErrors('missing_api_key', 'invalid_api_key'),
      },
    }),
    async (c) => c.text(await metrics.scrape(), 200, { 'Content-Type': metrics.contentType }),
  );
  return router;
}
