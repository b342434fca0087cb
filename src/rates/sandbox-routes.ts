import { createRoute } from '@hono/zod-openapi';
import { requireScope } from '../http/auth.js';
import { BEARER_SECURITY, controlErrors, createRouter, jsonBody, jsonResponse } from '../http/router.js';
import { twinDescription } from '../http/twin.js';
import { compareRates } from './pricing.js';
import { COMPARE_ERRORS, COMPARE_SUMMARY } from './routes.js';
import { RateListSchema, RatesRequestSchema } from './schema.js';

/** `POST /_sandbox/rates`: the dashboard's twin of the comparison (see http/twin.ts). */
export function rateControlRoutes() {
  const router = createRouter();
  router.openapi(
    createRoute({
      method: 'post',
      path: '/rates',
      operationId: 'sandboxCompareRates',
      tags: ['Sandbox controls'],
      summary: `${COMPARE_SUMMARY}, for the dashboard`,
      description: twinDescription('POST /v1/rates'),
      security: BEARER_SECURITY,
      middleware: [requireScope('rates:read')] as const,
      request: { body: jsonBody(RatesRequestSchema) },
      responses: {
        200: jsonResponse(RateListSchema, 'Rates, cheapest first'),
        ...controlErrors(...COMPARE_ERRORS),
      },
    }),
    (c) => c.json({ data: compareRates(c.req.valid('json')) }, 200),
  );
  return router;
}
