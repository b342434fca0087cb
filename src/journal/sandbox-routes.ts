import { createRoute, z } from '@hono/zod-openapi';
import { parseLimit } from '../core/paging.js';
import { limitParam, TimestampSchema } from '../core/schemas.js';
import { requireScope } from '../http/auth.js';
import { BEARER_SECURITY, controlErrors, createRouter, ErrorCodes, jsonResponse } from '../http/router.js';
import type { RequestJournal } from './journal.js';

const LIMIT = { default: 100, max: 1000 };
const LimitQuery = z.object({ limit: limitParam(LIMIT) });

const RequestEntrySchema = z
  .object({
    id: z
      .string()
      .openapi({ example: 'req_01JD…', description: "what the integration report's evidence names" }),
    method: z.string(),
    path: z.string(),
    query: z.string(),
    status: z.number().int().openapi({ description: '0 when an injected fault dropped the connection' }),
    code: z.string().nullable().openapi({ description: "the error's code when the answer was an error" }),
    field: z
      .string()
      .nullable()
      .openapi({ description: "the error's field, when one field was to blame (`to.zip`)" }),
    duration_ms: z.number(),
    at: TimestampSchema.openapi({ description: "when it arrived, on the account's clock" }),
    wall_at: TimestampSchema.openapi({ description: 'when it arrived, by the wall clock' }),
    key_id: z.string(),
    key_revoked: z
      .boolean()
      .openapi({ description: 'the key had been revoked, and the request was refused with 401' }),
    retry_after: z
      .number()
      .nullable()
      .openapi({ description: 'the Retry-After of the answer, in seconds, when it had one' }),
    body_sha256: z
      .string()
      .nullable()
      .openapi({ description: 'SHA-256 of the body, for methods that carry one' }),
  })
  .openapi('JournalEntry');

export function journalRoutes(journal: RequestJournal) {
  const router = createRouter();
  router.openapi(
    createRoute({
      method: 'get',
      path: '/requests',
      operationId: 'listRequests',
      tags: ['Sandbox controls'],
      summary: "The account's recent API requests (the last 1,000), newest first",
      security: BEARER_SECURITY,
      middleware: [requireScope('shipments:read')] as const,
      request: { query: LimitQuery },
      responses: {
        200: jsonResponse(
          z.object({ data: z.array(RequestEntrySchema) }).openapi('JournalEntryList'),
          'Requests',
        ),
        ...controlErrors(...ErrorCodes.query),
      },
    }),
    async (c) => {
      const limit = parseLimit(c.req.valid('query').limit, LIMIT);
      return c.json({ data: await journal.recent(c.get('caller').accountId, limit) }, 200);
    },
  );
  return router;
}
