import { createRoute, z } from '@hono/zod-openapi';
import { notFound } from '../core/errors.js';
import { type CursorCodec, LIST_PAGE_SIZE, pageMeta, parseLimit } from '../core/paging.js';
import { requireFullKey } from '../http/auth.js';
import {
  BEARER_SECURITY,
  controlErrors,
  createRouter,
  ErrorCodes,
  idParam,
  jsonBody,
  jsonResponse,
} from '../http/router.js';
import { newFaultRule, presentFault } from './rules.js';
import { CreateFaultSchema, FaultListSchema, FaultSchema, ListFaultsQuerySchema } from './schema.js';
import type { FaultStore } from './store.js';

const security = BEARER_SECURITY;
const tags = ['Sandbox controls'];

/** The rules' controls; `cursors` signs the list's cursors and checks the ones clients send back. */
export function faultRoutes(faults: FaultStore, cursors: CursorCodec) {
  const router = createRouter();

  router.openapi(
    createRoute({
      method: 'post',
      path: '/faults',
      operationId: 'createFault',
      tags,
      summary: 'Inject a fault into matching API requests',
      security,
      middleware: [requireFullKey] as const,
      request: { body: jsonBody(CreateFaultSchema) },
      responses: {
        201: jsonResponse(FaultSchema, 'The rule'),
        ...controlErrors(...ErrorCodes.body, ...ErrorCodes.validation, 'limit_reached', ...ErrorCodes.write),
      },
    }),
    async (c) =>
      c.json(presentFault(await faults.insert(newFaultRule(c.get('caller'), c.req.valid('json')))), 201),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/faults',
      operationId: 'listFaults',
      tags,
      summary: "The account's fault rules, newest first, a page at a time (as shipments)",
      security,
      middleware: [requireFullKey] as const,
      request: { query: ListFaultsQuerySchema },
      responses: {
        200: jsonResponse(FaultListSchema, 'A page of rules'),
        ...controlErrors(...ErrorCodes.query),
      },
    }),
    async (c) => {
      const { accountId } = c.get('caller');
      const query = c.req.valid('query');
      const limit = parseLimit(query.limit, LIST_PAGE_SIZE);
      const after = query.cursor === undefined ? undefined : cursors.decode(accountId, query.cursor);
      const { page, total } = await faults.page(accountId, limit, after);
      return c.json(
        { data: page.rows.map(presentFault), meta: pageMeta(cursors, accountId, page, total) },
        200,
      );
    },
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/faults/{id}',
      operationId: 'deleteFault',
      tags,
      summary: 'Remove a fault rule',
      security,
      middleware: [requireFullKey] as const,
      request: { params: idParam() },
      responses: {
        200: jsonResponse(z.object({ id: z.string(), deleted: z.literal(true) }), 'Removed'),
        ...controlErrors(...ErrorCodes.lookup, ...ErrorCodes.write),
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      if (!(await faults.delete(c.get('caller').accountId, id))) throw notFound('fault', id);
      return c.json({ id, deleted: true as const }, 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/faults',
      operationId: 'deleteAllFaults',
      tags,
      summary: 'Remove every fault rule of the account',
      security,
      middleware: [requireFullKey] as const,
      responses: {
        200: jsonResponse(z.object({ deleted: z.literal(true) }), 'Removed'),
        ...controlErrors(...ErrorCodes.write),
      },
    }),
    async (c) => {
      await faults.deleteAll(c.get('caller').accountId);
      return c.json({ deleted: true as const }, 200);
    },
  );

  return router;
}
