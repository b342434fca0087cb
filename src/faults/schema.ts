import { LIST_PAGE_SIZE } from '../core/paging.js';
import { PageMetaSchema, pageQuery, TimestampSchema } from '../core/schemas.js';
import { z } from '../core/zod.js';

const PATH_PATTERN = /^\/[A-Za-z0-9_\-./{}:]*\*?$/;

export const CreateFaultSchema = z
  .object({
    method: z
      .enum(['GET', 'POST', 'PATCH', 'PUT', 'DELETE'])
      .optional()
      .openapi({ description: 'any when omitted' }),
    path: z
      .string()
      .max(200, 'must be at most 200 characters')
      .regex(PATH_PATTERN, 'must be a path such as /v1/shipments or /v1/labels/*')
      .openapi({
        example: '/v1/shipments*',
        description: 'exact, or a prefix ending in *; /v1 may be left out',
      }),
    status: z
      .number()
      .int()
      .min(400, 'must be from 400 to 599')
      .max(599, 'must be from 400 to 599')
      .optional(),
    code: z
      .string()
      .regex(/^[a-z][a-z0-9_]{0,63}$/, 'must be a lower-case code such as service_unavailable')
      .optional(),
    retry_after: z
      .number()
      .int()
      .min(0)
      .max(86_400)
      .optional()
      .openapi({ description: 'seconds, for 429 and 503' }),
    delay_ms: z.number().int().min(0).max(60_000, 'must be at most 60000').optional(),
    drop: z.boolean().optional(),
    times: z.number().int().min(1, 'must be at least 1').max(1_000_000).optional().openapi({
      description: 'how many matching requests to affect; until removed when omitted',
    }),
  })
  .strict()
  .openapi('CreateFault');

export const FaultSchema = z
  .object({
    id: z.string(),
    method: z.string().nullable(),
    path: z.string(),
    status: z.number().nullable(),
    code: z.string().nullable(),
    retry_after: z.number().nullable(),
    delay_ms: z.number(),
    drop: z.boolean(),
    times: z.number().nullable(),
    remaining: z.number().nullable(),
    created_at: TimestampSchema,
  })
  .openapi('Fault');

export const FaultListSchema = z
  .object({ data: z.array(FaultSchema), meta: PageMetaSchema })
  .openapi('FaultList');

/** `GET /_sandbox/faults` pages as `GET /v1/shipments` does. */
export const ListFaultsQuerySchema = z.object(pageQuery(LIST_PAGE_SIZE));

export type CreateFaultInput = z.infer<typeof CreateFaultSchema>;
