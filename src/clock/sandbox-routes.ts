import { createRoute } from '@hono/zod-openapi';
import { ApiError } from '../core/errors.js';
import { parseLimit } from '../core/paging.js';
import { formatTimestamp } from '../core/time.js';
import { requireScope } from '../http/auth.js';
import {
  BEARER_SECURITY,
  controlErrors,
  createRouter,
  ErrorCodes,
  jsonBody,
  jsonResponse,
} from '../http/router.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import {
  AdvanceClockSchema,
  AdvancedClockSchema,
  ClockSchema,
  ClockSettingsSchema,
  DUE_LIST_LIMIT,
  DueListQuerySchema,
  DueListSchema,
} from './schema.js';
import type { ClockService } from './service.js';

const security = BEARER_SECURITY;
const tags = ['Sandbox controls'];

export function clockRoutes(clock: ClockService, scheduler: Scheduler) {
  const router = createRouter();

  router.openapi(
    createRoute({
      method: 'get',
      path: '/clock',
      operationId: 'getClock',
      tags,
      summary: "Read the account's clock",
      security,
      middleware: [requireScope('shipments:read')] as const,
      responses: { 200: jsonResponse(ClockSchema, 'The clock'), ...controlErrors() },
    }),
    async (c) => c.json(await clock.read(c.get('caller').accountId), 200),
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/clock',
      operationId: 'setClock',
      tags,
      summary: 'Set the clock speed, freeze or unfreeze it',
      security,
      middleware: [requireScope('shipments:write')] as const,
      request: { body: jsonBody(ClockSettingsSchema) },
      responses: {
        200: jsonResponse(ClockSchema, 'The clock'),
        ...controlErrors(...ErrorCodes.body, ...ErrorCodes.validation, ...ErrorCodes.write),
      },
    }),
    async (c) => c.json(await clock.set(c.get('caller').accountId, c.req.valid('json')), 200),
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/clock/advance',
      operationId: 'advanceClock',
      tags,
      summary: 'Move the clock forward and run everything that falls due',
      security,
      middleware: [requireScope('shipments:write')] as const,
      request: { body: jsonBody(AdvanceClockSchema) },
      responses: {
        200: jsonResponse(AdvancedClockSchema, 'The clock, and what ran'),
        // `invalid_field` also for a `to` before the clock's present, or a negative `by` (the clock
        // never moves backwards), and for a move past ten years or the end of time.
        ...controlErrors(...ErrorCodes.body, ...ErrorCodes.validation, ...ErrorCodes.write),
      },
    }),
    async (c) => {
      const { by, to } = c.req.valid('json');
      if (by !== undefined && to !== undefined) {
        throw new ApiError(422, 'invalid_field', "Give either 'by' or 'to', not both.", { field: 'to' });
      }
      const request = to !== undefined ? { to } : by !== undefined ? { by } : undefined;
      if (!request)
        throw new ApiError(422, 'missing_field', "'by' (a duration) or 'to' (a timestamp) is required.", {
          field: 'by',
        });
      return c.json(await clock.advance(c.get('caller').accountId, request), 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/clock/due',
      operationId: 'listDueWork',
      tags,
      summary: "What falls due next on the account's clock: tracking steps and webhook attempts",
      security,
      middleware: [requireScope('shipments:read')] as const,
      request: { query: DueListQuerySchema },
      responses: { 200: jsonResponse(DueListSchema, 'Soonest first'), ...controlErrors(...ErrorCodes.query) },
    }),
    async (c) => {
      const limit = parseLimit(c.req.valid('query').limit, DUE_LIST_LIMIT);
      const items = await scheduler.upcoming(c.get('caller').accountId, limit);
      return c.json(
        {
          data: items.map((item) => ({
            id: item.id,
            kind: item.kind,
            subject: item.subject,
            due_at: formatTimestamp(item.dueAt),
            detail: item.detail,
          })),
        },
        200,
      );
    },
  );

  return router;
}
