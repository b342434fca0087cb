import { createRoute, z } from '@hono/zod-openapi';
import { requireScope } from '../http/auth.js';
import { BEARER_SECURITY, controlErrors, createRouter, ErrorCodes } from '../http/router.js';
import { toJUnit } from './junit.js';
import { ReportQuerySchema, ReportSchema } from './schema.js';
import type { ReportService } from './service.js';

/** `GET /_sandbox/report`: the integration report, as JSON or JUnit XML. */
export function reportRoutes(reports: ReportService) {
  const router = createRouter();
  router.openapi(
    createRoute({
      method: 'get',
      path: '/report',
      operationId: 'getIntegrationReport',
      tags: ['Sandbox controls'],
      summary: "The integration report: how the account's client behaves, and what would break in production",
      description:
        'Each check is `pass`, `fail` or `not_observed`, with a one-line summary and the evidence (request ids ' +
        'of GET /_sandbox/requests, delivery ids of GET /_sandbox/webhooks/:id/deliveries, label ids). ' +
        '`?format=junit` answers a JUnit XML document instead. See docs/report.md.',
      security: BEARER_SECURITY,
      middleware: [requireScope('shipments:read')] as const,
      request: { query: ReportQuerySchema },
      responses: {
        200: {
          description: 'The report',
          content: {
            'application/json': { schema: ReportSchema },
            'application/xml': {
              schema: z.string().openapi({ description: 'JUnit XML: one test case per check' }),
            },
          },
        },
        ...controlErrors(...ErrorCodes.query),
      },
    }),
    async (c) => {
      const report = await reports.report(c.get('caller'));
      if (c.req.valid('query').format === 'junit') {
        return c.body(toJUnit(report), 200, { 'content-type': 'application/xml; charset=utf-8' });
      }
      return c.json(report, 200);
    },
  );
  return router;
}
