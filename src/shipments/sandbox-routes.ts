import { createRoute, z } from '@hono/zod-openapi';
import { limitParam } from '../core/schemas.js';
import { requireScope } from '../http/auth.js';
import {
  BEARER_SECURITY,
  controlErrors,
  createRouter,
  ErrorCodes,
  jsonResponse,
  sendJsonText,
} from '../http/router.js';
import { REFERENCE_MAX_LENGTH, ShipmentSchema, ShipmentStatusSchema } from './schema.js';
import { SEARCH_PAGE_SIZE, type ShipmentService } from './service.js';

const SearchQuerySchema = z.object({
  q: z
    .string()
    .optional()
    .openapi({
      param: { name: 'q', in: 'query' },
      example: 'order-1042',
      description: `a shipment id or tracking number, or the start of a reference (at most ${REFERENCE_MAX_LENGTH} characters)`,
    }),
  status: ShipmentStatusSchema.optional().openapi({ param: { name: 'status', in: 'query' } }),
  limit: limitParam(SEARCH_PAGE_SIZE),
});

const ShipmentSearchSchema = z.object({ data: z.array(ShipmentSchema) }).openapi('ShipmentSearch');

/**
 * The dashboard's shipment list: a search by id, tracking number or reference. Under `/_sandbox`, so
 * a dashboard that keeps it up to date spends none of the account's rate limits.
 */
export function shipmentControlRoutes(shipments: ShipmentService) {
  const router = createRouter();

  router.openapi(
    createRoute({
      method: 'get',
      path: '/shipments',
      operationId: 'searchShipments',
      tags: ['Sandbox controls'],
      summary: 'Find shipments by id, tracking number or reference, newest first',
      description:
        'Without `q`, the newest shipments. With it, the shipments whose id or current tracking number is `q`, or ' +
        'whose reference starts with it (case-sensitive). `status` narrows either.',
      security: BEARER_SECURITY,
      middleware: [requireScope('shipments:read')] as const,
      request: { query: SearchQuerySchema },
      responses: {
        200: jsonResponse(ShipmentSearchSchema, 'The matching shipments'),
        ...controlErrors(...ErrorCodes.query),
      },
    }),
    async (c) => sendJsonText(c, await shipments.search(c.get('caller'), c.req.valid('query')), 200),
  );

  return router;
}
