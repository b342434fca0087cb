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
} from '../http/router.js';
import {
  CreateWebhookSchema,
  DeletedWebhookSchema,
  UpdateWebhookSchema,
  WebhookListSchema,
  WebhookSchema,
} from './schema.js';
import { presentWebhook, type WebhookService } from './service.js';

const IdParam = idParam('wh_01JD…');
const security = BEARER_SECURITY;
const tags = ['Webhooks'];

export function webhookRoutes(webhooks: WebhookService) {
  const router = createRouter();
  const read = requireScope('shipments:read');
  const write = requireScope('shipments:write');

  router.openapi(
    createRoute({
      method: 'post',
      path: '/webhooks',
      tags,
      summary: 'Register a webhook',
      security,
      middleware: [write] as const,
      request: { body: jsonBody(CreateWebhookSchema) },
      responses: {
        201: jsonResponse(WebhookSchema, 'The webhook'),
        ...errorResponses(...COMMON_ERRORS, 422),
      },
    }),
    (c) => c.json(presentWebhook(webhooks.create(c.get('caller'), c.req.valid('json'))), 201),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/webhooks',
      tags,
      summary: "The account's webhooks, newest first",
      security,
      middleware: [read] as const,
      responses: { 200: jsonResponse(WebhookListSchema, 'Webhooks'), ...errorResponses(...COMMON_ERRORS) },
    }),
    (c) => c.json({ data: webhooks.list(c.get('caller')).map(presentWebhook) }, 200),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/webhooks/{id}',
      tags,
      summary: 'Get a webhook',
      security,
      middleware: [read] as const,
      request: { params: IdParam },
      responses: {
        200: jsonResponse(WebhookSchema, 'The webhook'),
        ...errorResponses(...COMMON_ERRORS, 404),
      },
    }),
    (c) => c.json(presentWebhook(webhooks.get(c.get('caller'), c.req.valid('param').id)), 200),
  );

  router.openapi(
    createRoute({
      method: 'patch',
      path: '/webhooks/{id}',
      tags,
      summary: 'Change a webhook, or set a failed one active again',
      security,
      middleware: [write] as const,
      request: { params: IdParam, body: jsonBody(UpdateWebhookSchema) },
      responses: {
        200: jsonResponse(WebhookSchema, 'The webhook'),
        ...errorResponses(...COMMON_ERRORS, 404, 422),
      },
    }),
    (c) =>
      c.json(
        presentWebhook(webhooks.update(c.get('caller'), c.req.valid('param').id, c.req.valid('json'))),
        200,
      ),
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/webhooks/{id}',
      tags,
      summary: 'Delete a webhook',
      security,
      middleware: [write] as const,
      request: { params: IdParam },
      responses: {
        200: jsonResponse(DeletedWebhookSchema, 'Deleted'),
        ...errorResponses(...COMMON_ERRORS, 404),
      },
    }),
    (c) => c.json(webhooks.delete(c.get('caller'), c.req.valid('param').id), 200),
  );

  return router;
}
