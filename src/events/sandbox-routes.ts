import { createRoute, z } from '@hono/zod-openapi';
import { invalidParameter } from '../core/errors.js';
import { toJsonText } from '../core/json.js';
import { parseLimit } from '../core/paging.js';
import type { Sql } from '../db/sql.js';
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
import { sampleEventData } from './sample-events.js';
import { EVENT_LIST_LIMIT, EVENT_TYPES, EventListQuerySchema, EventSchema, TriggerSchema } from './schema.js';
import type { EventStore } from './store.js';

const security = BEARER_SECURITY;
const tags = ['Sandbox controls'];

/**
 * The account's event log, and test events fired on demand. `envelope` describes an event in the
 * document: by default any envelope; the wiring gives the union of the seven, each with its `data`.
 */
export function eventRoutes(db: Sql, events: EventStore, envelope: z.ZodType = EventSchema) {
  const router = createRouter();
  const EventListSchema = z.object({ data: z.array(envelope) }).openapi('EventList');

  router.openapi(
    createRoute({
      method: 'get',
      path: '/events',
      operationId: 'listEvents',
      tags,
      summary: "The account's events, newest first",
      security,
      middleware: [requireScope('shipments:read')] as const,
      request: { query: EventListQuerySchema },
      responses: { 200: jsonResponse(EventListSchema, 'Events'), ...controlErrors(...ErrorCodes.query) },
    }),
    async (c) => {
      const { event, limit } = c.req.valid('query');
      if (event !== undefined && !(EVENT_TYPES as readonly string[]).includes(event)) {
        throw invalidParameter('event', `'event' must be one of ${EVENT_TYPES.join(', ')}.`);
      }
      const take = parseLimit(limit, EVENT_LIST_LIMIT);
      return sendJsonText(
        c,
        await events.listText(c.get('caller').accountId, { type: event, limit: take }),
        200,
      );
    },
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/events/trigger',
      operationId: 'triggerEvent',
      tags,
      summary: "Fire an event with sample data to the account's webhooks",
      security,
      middleware: [requireScope('shipments:write')] as const,
      request: { body: jsonBody(TriggerSchema) },
      responses: {
        201: jsonResponse(envelope, 'The event envelope'),
        ...controlErrors(...ErrorCodes.body, ...ErrorCodes.validation, ...ErrorCodes.write),
      },
    }),
    async (c) => {
      const { event } = c.req.valid('json');
      const { accountId, now } = c.get('caller');
      const recorded = await db.transaction((tx) =>
        events.record(tx, accountId, event, toJsonText(sampleEventData(event, now)), now),
      );
      return sendJsonText(c, recorded.body, 201);
    },
  );

  return router;
}
