import { createRoute } from '@hono/zod-openapi';
import { requireScope } from '../http/auth.js';
import {
  BEARER_SECURITY,
  COMMON_ERRORS,
  createRouter,
  errorResponses,
  idParam,
  jsonBody,
  jsonResponse,
  sendJsonText,
} from '../http/router.js';
import {
  CancelledShipmentSchema,
  CreateShipmentSchema,
  ListShipmentsQuerySchema,
  ShipmentListSchema,
  ShipmentSchema,
} from './schema.js';
import type { ShipmentService } from './service.js';
import { presentShipment } from './store.js';

const IdParam = idParam('shp_01JD…');
const security = BEARER_SECURITY;

export function shipmentRoutes(shipments: ShipmentService) {
  const router = createRouter();
  const read = requireScope('shipments:read');
  const write = requireScope('shipments:write');

  router.openapi(
    createRoute({
      method: 'post',
      path: '/shipments',
      tags: ['Shipments'],
      summary: 'Create a shipment and rate it',
      security,
      middleware: [write] as const,
      request: { body: jsonBody(CreateShipmentSchema) },
      responses: {
        201: jsonResponse(ShipmentSchema, 'The shipment, in status created'),
        ...errorResponses(...COMMON_ERRORS, 422),
      },
    }),
    (c) => sendJsonText(c, shipments.create(c.get('caller'), c.req.valid('json')), 201),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/shipments',
      tags: ['Shipments'],
      summary: 'List shipments, newest first',
      security,
      middleware: [read] as const,
      request: { query: ListShipmentsQuerySchema },
      responses: {
        200: jsonResponse(ShipmentListSchema, 'A page of shipments'),
        ...errorResponses(...COMMON_ERRORS),
      },
    }),
    (c) => c.json(shipments.list(c.get('caller'), c.req.query()), 200),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/shipments/{id}',
      tags: ['Shipments'],
      summary: 'Get a shipment',
      security,
      middleware: [read] as const,
      request: { params: IdParam },
      responses: {
        200: jsonResponse(ShipmentSchema, 'The shipment'),
        ...errorResponses(...COMMON_ERRORS, 404),
      },
    }),
    (c) => c.json(presentShipment(shipments.get(c.get('caller'), c.req.valid('param').id)), 200),
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/shipments/{id}',
      tags: ['Shipments'],
      summary: 'Cancel a shipment (voids its label, if any)',
      security,
      middleware: [write] as const,
      request: { params: IdParam },
      responses: {
        200: jsonResponse(CancelledShipmentSchema, 'The cancelled shipment'),
        ...errorResponses(...COMMON_ERRORS, 404, 422),
      },
    }),
    (c) => sendJsonText(c, shipments.cancel(c.get('caller'), c.req.valid('param').id), 200),
  );

  return router;
}
