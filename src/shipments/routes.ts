import { createRoute } from '@hono/zod-openapi';
import { requireScope } from '../http/auth.js';
import {
  apiErrors,
  apiResponse,
  BEARER_SECURITY,
  createRouter,
  ErrorCodes,
  idParam,
  jsonBody,
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

export const IdParam = idParam('shp_01JD…');
const security = BEARER_SECURITY;

/** What creating and cancelling can answer besides every route's codes (the twins under /_sandbox too). */
export const CREATE_ERRORS = [
  ...ErrorCodes.body,
  ...ErrorCodes.validation,
  'invalid_address',
  'invalid_carrier',
  'invalid_service',
  ...ErrorCodes.write,
] as const;
export const CANCEL_ERRORS = [...ErrorCodes.lookup, 'shipment_not_cancellable', ...ErrorCodes.write] as const;

export function shipmentRoutes(shipments: ShipmentService) {
  const router = createRouter();
  const read = requireScope('shipments:read');
  const write = requireScope('shipments:write');

  router.openapi(
    createRoute({
      method: 'post',
      path: '/shipments',
      operationId: 'createShipment',
      tags: ['Shipments'],
      summary: 'Create a shipment and rate it',
      security,
      middleware: [write] as const,
      request: { body: jsonBody(CreateShipmentSchema) },
      responses: {
        201: apiResponse(ShipmentSchema, 'The shipment, in status created'),
        ...apiErrors(...CREATE_ERRORS),
      },
    }),
    async (c) => sendJsonText(c, await shipments.create(c.get('caller'), c.req.valid('json')), 201),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/shipments',
      operationId: 'listShipments',
      tags: ['Shipments'],
      summary: 'List shipments, newest first',
      security,
      middleware: [read] as const,
      request: { query: ListShipmentsQuerySchema },
      responses: {
        200: apiResponse(ShipmentListSchema, 'A page of shipments'),
        ...apiErrors(...ErrorCodes.query),
      },
    }),
    async (c) => sendJsonText(c, await shipments.list(c.get('caller'), c.req.valid('query')), 200),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/shipments/{id}',
      operationId: 'getShipment',
      tags: ['Shipments'],
      summary: 'Get a shipment',
      security,
      middleware: [read] as const,
      request: { params: IdParam },
      responses: {
        200: apiResponse(ShipmentSchema, 'The shipment'),
        ...apiErrors(...ErrorCodes.lookup),
      },
    }),
    async (c) => sendJsonText(c, await shipments.getJson(c.get('caller'), c.req.valid('param').id), 200),
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/shipments/{id}',
      operationId: 'cancelShipment',
      tags: ['Shipments'],
      summary: 'Cancel a shipment (voids its label, if any)',
      security,
      middleware: [write] as const,
      request: { params: IdParam },
      responses: {
        200: apiResponse(CancelledShipmentSchema, 'The cancelled shipment'),
        ...apiErrors(...CANCEL_ERRORS),
      },
    }),
    async (c) => sendJsonText(c, await shipments.cancel(c.get('caller'), c.req.valid('param').id), 200),
  );

  return router;
}
