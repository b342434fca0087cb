import { createRoute, z } from '@hono/zod-openapi';
import { ApiError } from '../core/errors.js';
import { parseLimit } from '../core/paging.js';
import { limitParam, TimestampSchema } from '../core/schemas.js';
import { formatTimestamp } from '../core/time.js';
import type { Sql } from '../db/sql.js';
import { requireScope } from '../http/auth.js';
import {
  BEARER_SECURITY,
  controlErrors,
  createRouter,
  ErrorCodes,
  idParam,
  jsonBody,
  jsonResponse,
} from '../http/router.js';
import { twinDescription } from '../http/twin.js';
import type { AttemptStore } from './attempt-store.js';
import type { WebhookDelivery } from './delivery.js';
import { CREATE_ERRORS, IdParam, LIST_ERRORS, UPDATE_ERRORS } from './routes.js';
import {
  AttemptListSchema,
  AttemptSchema,
  CreateWebhookSchema,
  DeletedWebhookSchema,
  ListWebhooksQuerySchema,
  ProbeResultSchema,
  SentAttemptSchema,
  UpdateWebhookSchema,
  WebhookListSchema,
  WebhookSchema,
} from './schema.js';
import { presentAttempt, presentProbe, presentWebhook, type WebhookService } from './service.js';
import type { WebhookStore } from './store.js';

const security = BEARER_SECURITY;
const tags = ['Sandbox controls'];
const LIMIT = { default: 100, max: 1000 };
const LimitQuery = z.object({ limit: limitParam(LIMIT) });

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

/**
 * Inspection of webhook traffic, redelivery, the e-mail outbox, and the twins of listing, registering,
 * changing and deleting webhooks that the dashboard and the command line use (see http/twin.ts).
 */
export function webhookControlRoutes(
  db: Sql,
  webhooks: WebhookService,
  delivery: WebhookDelivery,
  store: WebhookStore,
  attempts: AttemptStore,
) {
  const router = createRouter();

  router.openapi(
    createRoute({
      method: 'get',
      path: '/webhooks',
      operationId: 'sandboxListWebhooks',
      tags,
      summary: "The account's webhooks, newest first, a page at a time, for the dashboard",
      description: twinDescription('GET /v1/webhooks'),
      security,
      middleware: [requireScope('shipments:read')] as const,
      request: { query: ListWebhooksQuerySchema },
      responses: {
        200: jsonResponse(WebhookListSchema, 'A page of webhooks'),
        ...controlErrors(...LIST_ERRORS),
      },
    }),
    async (c) => c.json(await webhooks.list(c.get('caller'), c.req.valid('query')), 200),
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/webhooks',
      operationId: 'sandboxCreateWebhook',
      tags,
      summary: 'Register a webhook, for the dashboard',
      description: twinDescription('POST /v1/webhooks'),
      security,
      middleware: [requireScope('shipments:write')] as const,
      request: { body: jsonBody(CreateWebhookSchema) },
      responses: {
        201: jsonResponse(WebhookSchema, 'The webhook'),
        ...controlErrors(...CREATE_ERRORS),
      },
    }),
    async (c) => c.json(presentWebhook(await webhooks.create(c.get('caller'), c.req.valid('json'))), 201),
  );

  router.openapi(
    createRoute({
      method: 'patch',
      path: '/webhooks/{id}',
      operationId: 'sandboxUpdateWebhook',
      tags,
      summary: 'Change a webhook, or set a failed one active again, for the dashboard',
      description: twinDescription('PATCH /v1/webhooks/{id}'),
      security,
      middleware: [requireScope('shipments:write')] as const,
      request: { params: IdParam, body: jsonBody(UpdateWebhookSchema) },
      responses: {
        200: jsonResponse(WebhookSchema, 'The webhook'),
        ...controlErrors(...UPDATE_ERRORS),
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
      operationId: 'sandboxDeleteWebhook',
      tags,
      summary: "Delete a webhook, for the sandbox's own tools (the command line's `webhooks delete`)",
      description: twinDescription('DELETE /v1/webhooks/{id}'),
      security,
      middleware: [requireScope('shipments:write')] as const,
      request: { params: IdParam },
      responses: {
        200: jsonResponse(DeletedWebhookSchema, 'Deleted'),
        ...controlErrors(...ErrorCodes.lookup, ...ErrorCodes.write),
      },
    }),
    async (c) => c.json(await webhooks.delete(c.get('caller'), c.req.valid('param').id), 200),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/webhooks/{id}/deliveries',
      operationId: 'listDeliveries',
      tags,
      summary: 'Every delivery attempt of a webhook, newest first',
      security,
      middleware: [requireScope('shipments:read')] as const,
      request: { params: idParam('wh_01JD…'), query: LimitQuery },
      responses: {
        200: jsonResponse(AttemptListSchema, 'Attempts'),
        ...controlErrors(...ErrorCodes.query, ...ErrorCodes.lookup),
      },
    }),
    async (c) => {
      const webhook = await webhooks.get(c.get('caller'), c.req.valid('param').id);
      const limit = parseLimit(c.req.valid('query').limit, LIMIT);
      return c.json({ data: (await attempts.attempts(db, webhook.id, limit)).map(presentAttempt) }, 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/deliveries/{id}',
      operationId: 'getDelivery',
      tags,
      summary: 'One delivery attempt in full: the request as sent and the answer',
      security,
      middleware: [requireScope('shipments:read')] as const,
      request: { params: idParam('dlv_01JD…') },
      responses: {
        200: jsonResponse(SentAttemptSchema, 'The attempt, with its request'),
        ...controlErrors(...ErrorCodes.lookup),
      },
    }),
    async (c) => {
      const attempt = await webhooks.attempt(c.get('caller'), c.req.valid('param').id);
      return c.json({ ...presentAttempt(attempt), request: await delivery.sentRequest(attempt) }, 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/deliveries/{id}/redeliver',
      operationId: 'redeliver',
      tags,
      summary: 'Send a delivery again, now; answers once the receiver has answered',
      security,
      middleware: [requireScope('shipments:write')] as const,
      request: { params: idParam('dlv_01JD…') },
      responses: {
        200: jsonResponse(AttemptSchema, 'The new attempt'),
        ...controlErrors(...ErrorCodes.body, ...ErrorCodes.lookup, 'webhook_deleted', ...ErrorCodes.write),
      },
    }),
    async (c) => {
      const caller = c.get('caller');
      const original = await webhooks.attempt(caller, c.req.valid('param').id);
      if (!(await store.find(db, caller.accountId, original.webhookId))) {
        throw new ApiError(422, 'webhook_deleted', `The webhook of delivery ${original.id} was deleted.`);
      }
      return c.json(presentAttempt(await delivery.redeliver(original, caller.now)), 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/webhooks/{id}/probe',
      operationId: 'probeWebhook',
      tags,
      summary:
        'Send the receiver a correctly signed and a forged delivery; answers whether it told them apart',
      description:
        "Both deliveries carry `Service-Probe: true` and a fresh test event of the webhook's first subscribed type. " +
        'They show in the delivery log with `probe: true`, are never retried, never move the webhook toward ' +
        "`failed`, and count only toward the integration report's `verifies_signatures`. Answers once the " +
        'receiver has answered both (or the webhook timeout has passed).',
      security,
      middleware: [requireScope('shipments:write')] as const,
      request: { params: idParam() },
      responses: {
        200: jsonResponse(ProbeResultSchema, 'Both answers'),
        ...controlErrors(...ErrorCodes.body, ...ErrorCodes.lookup, ...ErrorCodes.write),
      },
    }),
    async (c) => {
      const caller = c.get('caller');
      const webhook = await webhooks.get(caller, c.req.valid('param').id);
      return c.json(presentProbe(await delivery.probe(webhook, caller.now)), 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/emails',
      operationId: 'listEmails',
      tags,
      summary: "The account's e-mail outbox (webhook failure alerts), newest first",
      security,
      middleware: [requireScope('shipments:read')] as const,
      request: { query: LimitQuery },
      responses: { 200: jsonResponse(EmailListSchema, 'E-mails'), ...controlErrors(...ErrorCodes.query) },
    }),
    async (c) => {
      const limit = parseLimit(c.req.valid('query').limit, LIMIT);
      const emails = await store.emails(db, c.get('caller').accountId, limit);
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
