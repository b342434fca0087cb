import { createRoute, z } from '@hono/zod-openapi';
import { parseLimit } from '../core/paging.js';
import { limitParam } from '../core/schemas.js';
import { requireScope } from '../http/auth.js';
import {
  BEARER_SECURITY,
  controlErrors,
  createRouter,
  ErrorCodes,
  idParam,
  jsonBody,
  jsonResponse,
  type Router,
} from '../http/router.js';
import {
  DeliveryOutcomeSchema,
  ListenerDeliveryListSchema,
  ListenerDeliverySchema,
  ListenerListSchema,
  ListenerSchema,
  ListenerSecretSchema,
  OpenListenerSchema,
} from './schema.js';
import { type ListenerService, presentListener, presentListenerAttempt } from './service.js';

const security = BEARER_SECURITY;
const tags = ['Sandbox controls'];
/** Every route of a session needs what reading the account needs: a listener only receives. */
const middleware = () => [requireScope('shipments:read')] as [ReturnType<typeof requireScope>];
const LIMIT = { default: 100, max: 1000 };

const DeliveryParams = z.object({
  id: z.string().openapi({ param: { name: 'id', in: 'path' }, example: 'lsn_01JD…' }),
  delivery_id: z.string().openapi({ param: { name: 'delivery_id', in: 'path' }, example: 'dlv_01JD…' }),
});

/**
 * Listen sessions (`shipping-sandbox listen`): opening one, the account's open ones and their
 * deliveries, and what the command posts back (each delivery's answer, each heartbeat's). Under
 * `/_sandbox`, so none of it counts against the account: no rate limit, no journal, no report.
 */
export function listenerRoutes(listeners: ListenerService): Router {
  const router = createRouter();

  router.openapi(
    createRoute({
      method: 'post',
      path: '/listeners',
      operationId: 'openListener',
      tags,
      summary: 'Open a listen session: the events it receives go down its stream',
      description:
        'What `shipping-sandbox listen` does first. Then `GET /_sandbox/listeners/{id}/stream` holds the ' +
        "session's connection. A session not held by a connection ends 10 s after it was opened or its " +
        'connection closed; its attempts still pending then fail with `listener_gone`.',
      security,
      middleware: middleware(),
      request: { body: jsonBody(OpenListenerSchema) },
      responses: {
        201: jsonResponse(ListenerSchema, 'The session'),
        ...controlErrors(...ErrorCodes.body, ...ErrorCodes.validation, 'limit_reached', ...ErrorCodes.write),
      },
    }),
    async (c) => c.json(presentListener(await listeners.open(c.get('caller'), c.req.valid('json'))), 201),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/listeners',
      operationId: 'listListeners',
      tags,
      summary: "The account's open listen sessions, newest first",
      description:
        'Each `shipping-sandbox listen` running, or closed less than 10 s ago. `GET /v1/webhooks` never lists them.',
      security,
      middleware: middleware(),
      responses: { 200: jsonResponse(ListenerListSchema, 'Sessions'), ...controlErrors() },
    }),
    async (c) =>
      c.json({ data: (await listeners.list(c.get('caller').accountId)).map(presentListener) }, 200),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/listen-secret',
      operationId: 'getListenerSecret',
      tags,
      summary: "The account's listen signing secret (`shipping-sandbox listen --print-secret`)",
      security,
      middleware: middleware(),
      responses: {
        200: jsonResponse(ListenerSecretSchema, 'The secret'),
        ...controlErrors(...ErrorCodes.write),
      },
    }),
    async (c) => c.json({ secret: await listeners.secretOf(c.get('caller').accountId) }, 200),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/listeners/{id}/deliveries',
      operationId: 'listListenerDeliveries',
      tags,
      summary: "A session's delivery attempts, newest first, in the shape of a webhook's",
      description: 'Readable after the session ended too, until the account is reset.',
      security,
      middleware: middleware(),
      request: { params: idParam('lsn_01JD…'), query: z.object({ limit: limitParam(LIMIT) }) },
      responses: {
        200: jsonResponse(ListenerDeliveryListSchema, 'Attempts'),
        ...controlErrors(...ErrorCodes.query, ...ErrorCodes.lookup),
      },
    }),
    async (c) => {
      const limit = parseLimit(c.req.valid('query').limit, LIMIT);
      const attempts = await listeners.deliveries(c.get('caller'), c.req.valid('param').id, limit);
      return c.json({ data: attempts.map(presentListenerAttempt) }, 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/listeners/{id}/deliveries/{delivery_id}/outcome',
      operationId: 'reportListenerDelivery',
      tags,
      summary: 'How the receiver answered a delivery the command forwarded',
      description:
        "The command reports each answer: a non-2xx (or an error) is retried on the account's ladder through the " +
        'session. The first outcome counts: one reported again changes nothing and answers the attempt as recorded.',
      security,
      middleware: middleware(),
      request: { params: DeliveryParams, body: jsonBody(DeliveryOutcomeSchema) },
      responses: {
        200: jsonResponse(ListenerDeliverySchema, 'The attempt'),
        ...controlErrors(
          ...ErrorCodes.body,
          ...ErrorCodes.validation,
          ...ErrorCodes.lookup,
          ...ErrorCodes.write,
        ),
      },
    }),
    async (c) => {
      const { id, delivery_id } = c.req.valid('param');
      const attempt = await listeners.recordOutcome(c.get('caller'), id, delivery_id, c.req.valid('json'));
      return c.json(presentListenerAttempt(attempt), 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/listeners/{id}/heartbeat',
      operationId: 'answerListenerHeartbeat',
      tags,
      summary: "The command still reads the session's stream",
      description:
        'The command answers each heartbeat of the stream with this. A session whose command answers none ' +
        'for two and a half heartbeats has its connection closed by the sandbox (then it ends 10 s later).',
      security,
      middleware: middleware(),
      request: { params: idParam('lsn_01JD…') },
      responses: {
        200: jsonResponse(ListenerSchema, 'The session'),
        ...controlErrors(...ErrorCodes.body, ...ErrorCodes.lookup, ...ErrorCodes.write),
      },
    }),
    async (c) =>
      c.json(presentListener(await listeners.heartbeat(c.get('caller'), c.req.valid('param').id)), 200),
  );

  return router;
}
