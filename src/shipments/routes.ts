import { createRoute } from '@hono/zod-openapi';
import { requireScope } from '../http/auth.js';
import { actorOf } from '../http/context.js';
import {
  BEARER_SECURITY,
  COMMON_ERRORS,
  createRouter,
  errorResponses,
  idParam,
  jsonBody,
  jsonResponse,
} from '../http/router.js';
import type { State } from '../state.js';
import {
  CancelledShipmentSchema,
  CreateShipmentSchema,
  ListShipmentsQuerySchema,
  ShipmentListSchema,
  ShipmentSchema,
} from './schema.js';
import { cancelledBody, cancelShipment, createShipment, getShipment, listShipments } from './service.js';
import { presentShipment } from './store.js';

const IdParam = idParam('shp_01JD…');
const security = BEARER_SECURITY;

export function shipmentRoutes(state: State) {
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
    (c) => {
      const record = createShipment(state, actorOf(c.get('auth')), c.req.valid('json'));
      return c.json(presentShipment(record), 201);
    },
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
    (c) => c.json(listShipments(state, actorOf(c.get('auth')), c.req.query()), 200),
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
    (c) => c.json(presentShipment(getShipment(state, actorOf(c.get('auth')), c.req.valid('param').id)), 200),
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
    (c) => c.json(cancelledBody(cancelShipment(state, actorOf(c.get('auth')), c.req.valid('param').id)), 200),
  );

  return router;
}
