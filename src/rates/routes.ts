import { createRoute } from '@hono/zod-openapi';
import { requireScope } from '../http/auth.js';
import {
  apiErrors,
  apiResponse,
  BEARER_SECURITY,
  createRouter,
  ErrorCodes,
  jsonBody,
} from '../http/router.js';
import { compareRates } from './pricing.js';
import { RateListSchema, RatesRequestSchema } from './schema.js';

export const COMPARE_SUMMARY = 'Compare the rates of every carrier for a parcel, cheapest first';
/** What comparing can answer besides every route's codes (the twin too): nothing is written, quoting is pure. */
export const COMPARE_ERRORS = [...ErrorCodes.body, ...ErrorCodes.validation, 'invalid_address'] as const;

/** `POST /v1/rates`: every carrier's rate for a parcel, cheapest first. */
export function rateRoutes() {
  const router = createRouter();
  router.openapi(
    createRoute({
      method: 'post',
      path: '/rates',
      operationId: 'compareRates',
      tags: ['Rates'],
      summary: COMPARE_SUMMARY,
      security: BEARER_SECURITY,
      middleware: [requireScope('rates:read')] as const,
      request: { body: jsonBody(RatesRequestSchema) },
      responses: {
        200: apiResponse(RateListSchema, 'Rates, cheapest first'),
        ...apiErrors(...COMPARE_ERRORS),
      },
    }),
    (c) => c.json({ data: compareRates(c.req.valid('json')) }, 200),
  );
  return router;
}
