import { createRoute, z } from '@hono/zod-openapi';
import { limitParam } from '../core/schemas.js';
import { requireScope } from '../http/auth.js';
import {
  BEARER_SECURITY,
  controlErrors,
  createRouter,
  ErrorCodes,
  jsonBody,
  jsonResponse,
  sendJsonText,
} from '../http/router.js';
import { twinDescription } from '../http/twin.js';
import { CANCEL_ERRORS, CREATE_ERRORS, IdParam } from './routes.js';
import {
  CancelledShipmentSchema,
  CreateShipmentSchema,
  REFERENCE_MAX_LENGTH,
  ShipmentSchema,
  ShipmentStatusSchema,
} from './schema.js';
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
 * The dashboard's shipment list (a search by id, tracking number or reference) and its twins of
 * creating and cancelling (see http/twin.ts). Under `/_sandbox`, so what the dashboard does spends
 * none of the account's rate limits and is not judged as the merchant's client.
 */
export function shipmentControlRoutes(shipments: ShipmentService) {
  const router = createRouter();
  const tags = ['Sandbox controls'];

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

  router.openapi(
    createRoute({
      method: 'post',
      path: '/shipments',
      operationId: 'sandboxCreateShipment',
      tags,
      summary: 'Create a shipment and rate it, for the dashboard',
      description: twinDescription('POST /v1/shipments'),
      security: BEARER_SECURITY,
      middleware: [requireScope('shipments:write')] as const,
      request: { body: jsonBody(CreateShipmentSchema) },
      responses: {
        201: jsonResponse(ShipmentSchema, 'The shipment, in status created'),
        ...controlErrors(...CREATE_ERRORS),
      },
    }),
    async (c) => sendJsonText(c, await shipments.create(c.get('caller'), c.req.valid('json')), 201),
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/shipments/{id}',
      operationId: 'sandboxCancelShipment',
      tags,
      summary: 'Cancel a shipment (voids its label, if any), for the dashboard',
      description: twinDescription('DELETE /v1/shipments/{id}'),
      security: BEARER_SECURITY,
      middleware: [requireScope('shipments:write')] as const,
      request: { params: IdParam },
      responses: {
        200: jsonResponse(CancelledShipmentSchema, 'The cancelled shipment'),
        ...controlErrors(...CANCEL_ERRORS),
      },
    }),
    async (c) => sendJsonText(c, await shipments.cancel(c.get('caller'), c.req.valid('param').id), 200),
  );

  return router;
}
