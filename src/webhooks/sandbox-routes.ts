import { createRoute, z } from '@hono/zod-openapi';
import { ApiError } from '../core/errors.js';
import { parseLimit } from '../core/paging.js';
import { TimestampSchema } from '../core/schemas.js';
import { formatTimestamp } from '../core/time.js';
import { requireScope } from '../http/auth.js';
import { BEARER_SECURITY, createRouter, errorResponses, idParam, jsonResponse } from '../http/router.js';
import type { WebhookDelivery } from './delivery.js';
import { AttemptListSchema, AttemptSchema, SentAttemptSchema } from './schema.js';
import { presentAttempt, type WebhookService } from './service.js';
import type { WebhookStore } from './store.js';

const security = BEARER_SECURITY;
const tags = ['Sandbox controls'];
const ERRORS = [400, 401, 403, 404, 422, 500] as const;
const LimitQuery = z.object({
  limit: z
    .string()
    .optional()
    .openapi({ param: { name: 'limit', in: 'query' }, example: '100' }),
});

const EmailListSchema = z
  .object({
    data: z.array(
      z.object({
        id: z.string(),
        to: z.string(),
        subject: z.string(),
        body: z.string(),
        created_at: TimestampSchema,
      }),
    ),
  })
  .openapi('EmailList');

/** Inspection of webhook traffic, redelivery, and the e-mail outbox. */
export function webhookControlRoutes(
  webhooks: WebhookService,
  delivery: WebhookDelivery,
  store: WebhookStore,
) {
  const router = createRouter();

  router.openapi(
    createRoute({
      method: 'get',
      path: '/webhooks/{id}/deliveries',
      tags,
      summary: 'Every delivery attempt of a webhook, newest first',
      security,
      middleware: [requireScope('shipments:read')] as const,
      request: { params: idParam(), query: LimitQuery },
      responses: { 200: jsonResponse(AttemptListSchema, 'Attempts'), ...errorResponses(...ERRORS) },
    }),
    (c) => {
      const webhook = webhooks.get(c.get('caller'), c.req.valid('param').id);
      const limit = parseLimit(c.req.valid('query').limit, { default: 100, max: 1000 });
      return c.json({ data: store.attempts(webhook.id, limit).map(presentAttempt) }, 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/deliveries/{id}',
      tags,
      summary: 'One delivery attempt in full: the request as sent and the answer',
      security,
      middleware: [requireScope('shipments:read')] as const,
      request: { params: idParam('dlv_01JD…') },
      responses: {
        200: jsonResponse(SentAttemptSchema, 'The attempt, with its request'),
        ...errorResponses(...ERRORS),
      },
    }),
    (c) => {
      const attempt = webhooks.attempt(c.get('caller'), c.req.valid('param').id);
      return c.json({ ...presentAttempt(attempt), request: delivery.sentRequest(attempt) }, 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/deliveries/{id}/redeliver',
      tags,
      summary: 'Send a delivery again, now; answers once the receiver has answered',
      security,
      middleware: [requireScope('shipments:write')] as const,
      request: { params: idParam() },
      responses: { 200: jsonResponse(AttemptSchema, 'The new attempt'), ...errorResponses(...ERRORS) },
    }),
    async (c) => {
      const caller = c.get('caller');
      const original = webhooks.attempt(caller, c.req.valid('param').id);
      if (!store.find(caller.accountId, original.webhookId)) {
        throw new ApiError(422, 'webhook_deleted', `The webhook of delivery ${original.id} was deleted.`);
      }
      return c.json(presentAttempt(await delivery.redeliver(original, caller.now)), 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/emails',
      tags,
      summary: "The account's e-mail outbox (webhook failure alerts), newest first",
      security,
      middleware: [requireScope('shipments:read')] as const,
      request: { query: LimitQuery },
      responses: { 200: jsonResponse(EmailListSchema, 'E-mails'), ...errorResponses(...ERRORS) },
    }),
    (c) => {
      const limit = parseLimit(c.req.valid('query').limit, { default: 100, max: 1000 });
      const emails = store.emails(c.get('caller').accountId, limit);
      return c.json(
        {
          data: emails.map((email) => ({
            id: email.id,
            to: email.recipient,
            subject: email.subject,
            body: email.body,
            created_at: formatTimestamp(email.created_at),
          })),
        },
        200,
      );
    },
  );

  return router;
}
