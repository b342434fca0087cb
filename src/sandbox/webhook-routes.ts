import { createRoute, z } from '@hono/zod-openapi';
import { ApiError, notFound } from '../core/errors.js';
import { parseLimit } from '../core/paging.js';
import { TimestampSchema } from '../core/schemas.js';
import { formatTimestamp } from '../core/time.js';
import { transaction } from '../db/database.js';
import { EVENT_TYPES } from '../events/store.js';
import {
  BEARER_SECURITY,
  createRouter,
  errorResponses,
  idParam,
  jsonBody,
  jsonResponse,
} from '../http/router.js';
import type { State } from '../state.js';
import { sampleEventData } from '../webhooks/sample-events.js';
import { AttemptListSchema, AttemptSchema } from '../webhooks/schema.js';
import { getWebhook, presentAttempt } from '../webhooks/service.js';
import { EventSchema } from './schema.js';

const security = BEARER_SECURITY;
const tags = ['Sandbox controls'];
const ERRORS = [400, 401, 404, 422, 500] as const;
const LimitQuery = z.object({
  limit: z
    .string()
    .optional()
    .openapi({ param: { name: 'limit', in: 'query' }, example: '100' }),
});

const TriggerSchema = z
  .object({ event: z.enum(EVENT_TYPES).openapi({ example: 'tracking.delivered' }) })
  .strict()
  .openapi('TriggerEvent');

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

/** Inspection of webhook traffic, redelivery, test events and the e-mail outbox. */
export function webhookControlRoutes(state: State) {
  const router = createRouter();

  router.openapi(
    createRoute({
      method: 'get',
      path: '/webhooks/{id}/deliveries',
      tags,
      summary: 'Every delivery attempt of a webhook, newest first',
      security,
      request: {
        params: idParam(),
        query: LimitQuery,
      },
      responses: { 200: jsonResponse(AttemptListSchema, 'Attempts'), ...errorResponses(...ERRORS) },
    }),
    (c) => {
      const auth = c.get('auth');
      const webhook = getWebhook(
        state,
        { accountId: auth.account.id, now: auth.now },
        c.req.valid('param').id,
      );
      const limit = parseLimit(c.req.valid('query').limit, { default: 100, max: 1000 });
      return c.json({ data: state.webhooks.attempts(webhook.id, limit).map(presentAttempt) }, 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/deliveries/{id}/redeliver',
      tags,
      summary: 'Send a delivery again, now; answers once the receiver has answered',
      security,
      request: { params: idParam() },
      responses: { 200: jsonResponse(AttemptSchema, 'The new attempt'), ...errorResponses(...ERRORS) },
    }),
    async (c) => {
      const auth = c.get('auth');
      const original = state.webhooks.findAttempt(c.req.valid('param').id);
      if (!original || original.accountId !== auth.account.id)
        throw notFound('delivery', c.req.valid('param').id);
      if (!state.webhooks.find(auth.account.id, original.webhookId)) {
        throw new ApiError(422, 'webhook_deleted', `The webhook of delivery ${original.id} was deleted.`);
      }
      return c.json(presentAttempt(await state.delivery.redeliver(original, auth.now)), 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/events/trigger',
      tags,
      summary: "Fire an event with sample data to the account's webhooks",
      security,
      request: { body: jsonBody(TriggerSchema) },
      responses: { 201: jsonResponse(EventSchema, 'The event envelope'), ...errorResponses(...ERRORS) },
    }),
    (c) => {
      const { event } = c.req.valid('json');
      const auth = c.get('auth');
      const envelope = transaction(state.db, () =>
        state.events.record(auth.account.id, event, sampleEventData(event, auth.now), auth.now),
      );
      return c.json(envelope, 201);
    },
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/emails',
      tags,
      summary: "The account's e-mail outbox (webhook failure alerts), newest first",
      security,
      request: { query: LimitQuery },
      responses: { 200: jsonResponse(EmailListSchema, 'E-mails'), ...errorResponses(...ERRORS) },
    }),
    (c) => {
      const limit = parseLimit(c.req.valid('query').limit, { default: 100, max: 1000 });
      const emails = state.webhooks.emails(c.get('auth').account.id, limit);
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
