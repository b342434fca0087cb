import { createRoute } from '@hono/zod-openapi';
import { checkAddress, verifyDestination } from '../addresses/verification.js';
import { requireScope } from '../http/auth.js';
import {
  apiErrors,
  apiResponse,
  BEARER_SECURITY,
  createRouter,
  ErrorCodes,
  jsonBody,
} from '../http/router.js';
import { quoteAll } from './pricing.js';
import { RateListSchema, RatesRequestSchema } from './schema.js';

/** `POST /v1/rates`: every carrier's rate for a parcel, cheapest first. */
export function rateRoutes() {
  const router = createRouter();
  router.openapi(
    createRoute({
      method: 'post',
      path: '/rates',
      operationId: 'compareRates',
      tags: ['Rates'],
      summary: 'Compare the rates of every carrier for a parcel, cheapest first',
      security: BEARER_SECURITY,
      middleware: [requireScope('rates:read')] as const,
      request: { body: jsonBody(RatesRequestSchema) },
      responses: {
        200: apiResponse(RateListSchema, 'Rates, cheapest first'),
        // Nothing is written: quoting is pure.
        ...apiErrors(...ErrorCodes.body, ...ErrorCodes.validation, 'invalid_address'),
      },
    }),
    (c) => {
      const { from, to, parcel } = c.req.valid('json');
      checkAddress(from, 'from');
      checkAddress(to, 'to');
      verifyDestination(to);
      return c.json({ data: quoteAll(from, to, parcel) }, 200);
    },
  );
  return router;
}
