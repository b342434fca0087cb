import { createRoute } from '@hono/zod-openapi';
import { invalidParameter } from '../core/errors.js';
import { toJsonText } from '../core/json.js';
import { parseLimit } from '../core/paging.js';
import { type Db, transaction } from '../db/database.js';
import { requireScope } from '../http/auth.js';
import {
  BEARER_SECURITY,
  COMMON_ERRORS,
  createRouter,
  errorResponses,
  jsonBody,
  jsonResponse,
  sendJsonText,
} from '../http/router.js';
import { sampleEventData } from './sample-events.js';
import { EVENT_TYPES, EventListQuerySchema, EventListSchema, EventSchema, TriggerSchema } from './schema.js';
import type { EventStore } from './store.js';

const security = BEARER_SECURITY;
const tags = ['Sandbox controls'];

/** The account's event log, and test events fired on demand. */
export function eventRoutes(db: Db, events: EventStore) {
  const router = createRouter();

  router.openapi(
    createRoute({
      method: 'get',
      path: '/events',
      tags,
      summary: "The account's events, newest first",
      security,
      middleware: [requireScope('shipments:read')] as const,
      request: { query: EventListQuerySchema },
      responses: { 200: jsonResponse(EventListSchema, 'Events'), ...errorResponses(...COMMON_ERRORS) },
    }),
    (c) => {
      const { event, limit } = c.req.valid('query');
      if (event !== undefined && !(EVENT_TYPES as readonly string[]).includes(event)) {
        throw invalidParameter('event', `'event' must be one of ${EVENT_TYPES.join(', ')}.`);
      }
      const take = parseLimit(limit, { default: 100, max: 1000 });
      return sendJsonText(c, events.listText(c.get('caller').accountId, { type: event, limit: take }), 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/events/trigger',
      tags,
      summary: "Fire an event with sample data to the account's webhooks",
      security,
      middleware: [requireScope('shipments:write')] as const,
      request: { body: jsonBody(TriggerSchema) },
      responses: {
        201: jsonResponse(EventSchema, 'The event envelope'),
        ...errorResponses(400, 401, 403, 404, 422, 500),
      },
    }),
    (c) => {
      const { event } = c.req.valid('json');
      const { accountId, now } = c.get('caller');
      const recorded = transaction(db, () =>
        events.record(accountId, event, toJsonText(sampleEventData(event, now)), now),
      );
      return sendJsonText(c, recorded.body, 201);
    },
  );

  return router;
}
