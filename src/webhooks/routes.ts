import { createRoute, type RouteConfig } from '@hono/zod-openapi';
import { EVENT_TYPES } from '../events/schema.js';
import { requireScope } from '../http/auth.js';
import {
  apiErrors,
  apiResponse,
  BEARER_SECURITY,
  createRouter,
  ErrorCodes,
  idParam,
  jsonBody,
} from '../http/router.js';
import { DeliveryHeadersSchema, WEBHOOK_PAYLOADS } from './payloads.js';
import {
  CreateWebhookSchema,
  DeletedWebhookSchema,
  ListWebhooksQuerySchema,
  UpdateWebhookSchema,
  WebhookListSchema,
  WebhookSchema,
} from './schema.js';
import { presentWebhook, type WebhookService } from './service.js';

export const IdParam = idParam('wh_01JD…');
const security = BEARER_SECURITY;
const tags = ['Webhooks'];

/**
 * What registering, changing and listing can answer besides every route's codes (the twins under
 * /_sandbox too). Only registering adds a webhook, so only it meets the account's cap.
 */
const CHANGE_ERRORS = [...ErrorCodes.body, ...ErrorCodes.validation, ...ErrorCodes.write] as const;
export const CREATE_ERRORS = [...CHANGE_ERRORS, 'limit_reached'] as const;
export const UPDATE_ERRORS = [...CHANGE_ERRORS, ...ErrorCodes.lookup] as const;
export const LIST_ERRORS = ErrorCodes.query;

export function webhookRoutes(webhooks: WebhookService) {
  const router = createRouter();
  const read = requireScope('shipments:read');
  const write = requireScope('shipments:write');

  router.openapi(
    createRoute({
      method: 'post',
      path: '/webhooks',
      operationId: 'createWebhook',
      tags,
      summary: 'Register a webhook',
      security,
      middleware: [write] as const,
      request: { body: jsonBody(CreateWebhookSchema) },
      responses: {
        201: apiResponse(WebhookSchema, 'The webhook'),
        ...apiErrors(...CREATE_ERRORS),
      },
    }),
    async (c) => c.json(presentWebhook(await webhooks.create(c.get('caller'), c.req.valid('json'))), 201),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/webhooks',
      operationId: 'listWebhooks',
      tags,
      summary: "The account's webhooks, newest first, a page at a time (as shipments)",
      security,
      middleware: [read] as const,
      request: { query: ListWebhooksQuerySchema },
      responses: { 200: apiResponse(WebhookListSchema, 'A page of webhooks'), ...apiErrors(...LIST_ERRORS) },
    }),
    async (c) => c.json(await webhooks.list(c.get('caller'), c.req.valid('query')), 200),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/webhooks/{id}',
      operationId: 'getWebhook',
      tags,
      summary: 'Get a webhook',
      security,
      middleware: [read] as const,
      request: { params: IdParam },
      responses: {
        200: apiResponse(WebhookSchema, 'The webhook'),
        ...apiErrors(...ErrorCodes.lookup),
      },
    }),
    async (c) => c.json(presentWebhook(await webhooks.get(c.get('caller'), c.req.valid('param').id)), 200),
  );

  router.openapi(
    createRoute({
      method: 'patch',
      path: '/webhooks/{id}',
      operationId: 'updateWebhook',
      tags,
      summary: 'Change a webhook, or set a failed one active again',
      security,
      middleware: [write] as const,
      request: { params: IdParam, body: jsonBody(UpdateWebhookSchema) },
      responses: {
        200: apiResponse(WebhookSchema, 'The webhook'),
        ...apiErrors(...UPDATE_ERRORS),
      },
    }),
    async (c) =>
      c.json(
        presentWebhook(await webhooks.update(c.get('caller'), c.req.valid('param').id, c.req.valid('json'))),
        200,
      ),
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/webhooks/{id}',
      operationId: 'deleteWebhook',
      tags,
      summary: 'Delete a webhook',
      security,
      middleware: [write] as const,
      request: { params: IdParam },
      responses: {
        200: apiResponse(DeletedWebhookSchema, 'Deleted'),
        ...apiErrors(...ErrorCodes.lookup, ...ErrorCodes.write),
      },
    }),
    async (c) => c.json(await webhooks.delete(c.get('caller'), c.req.valid('param').id), 200),
  );

  return router;
}

/** `shipment.created` → `shipmentCreated`: each delivery's operationId. */
const camelCase = (event: string) => event.replace(/\.(\w)/g, (_, letter: string) => letter.toUpperCase());

/**
 * The seven deliveries, for the OpenAPI document's `webhooks` section: what the sandbox POSTs to a
 * receiver for each event, and what it makes of the answer.
 */
export function webhookDeliveryDocs(): RouteConfig[] {
  return EVENT_TYPES.map((event) => ({
    method: 'post',
    path: event,
    operationId: camelCase(event),
    tags,
    summary: `The \`${event}\` delivery`,
    description:
      'POSTed to every active webhook subscribed to the event, as `application/json`. Retries (1 min, ' +
      '5 min, 30 min, 2 h, 8 h on the account clock unless the account sets its own) send the same bytes.',
    request: {
      headers: DeliveryHeadersSchema,
      body: { required: true, content: { 'application/json': { schema: WEBHOOK_PAYLOADS[event] } } },
    },
    // The sandbox calls the merchant's receiver with no credentials: the receiver trusts a delivery by
    // its `Service-Signature` (a header above), not by an authentication scheme.
    security: [],
    responses: {
      '2XX': {
        description:
          'Any 2xx acknowledges the delivery. Anything else, a redirect, a connection error or no answer ' +
          'within the timeout (10 s unless configured) fails the try and schedules the next.',
      },
    },
  }));
}
