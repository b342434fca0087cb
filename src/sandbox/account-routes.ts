import { createRoute, z } from '@hono/zod-openapi';
import { newKeyValue } from '../accounts/keys.js';
import type { ApiKeyRecord } from '../accounts/store.js';
import { SCOPES } from '../core/actor.js';
import { ApiError, invalidField, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { parseLimit } from '../core/paging.js';
import { TimestampSchema } from '../core/schemas.js';
import { formatTimestamp } from '../core/time.js';
import { defaultFaultCode } from '../faults/middleware.js';
import type { FaultRule } from '../faults/store.js';
import {
  BEARER_SECURITY,
  createRouter,
  errorResponses,
  idParam,
  jsonBody,
  jsonResponse,
} from '../http/router.js';
import type { State } from '../state.js';
import { resetAccount } from './reset.js';

const security = BEARER_SECURITY;
const tags = ['Sandbox controls'];
const ERRORS = [400, 401, 404, 422, 500] as const;
const IdParam = idParam();
const LimitQuery = z.object({
  limit: z
    .string()
    .optional()
    .openapi({ param: { name: 'limit', in: 'query' }, example: '100' }),
});

const CreateKeySchema = z
  .object({
    name: z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters'),
    scopes: z
      .array(z.enum(SCOPES))
      .min(1, 'must name at least one scope')
      .refine((list) => new Set(list).size === list.length, 'must not name a scope twice')
      .optional()
      .openapi({ description: 'a subset of the scopes; all of them when omitted' }),
  })
  .strict()
  .openapi('CreateKey');

const KeySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    scopes: z.array(z.enum(SCOPES)),
    created_at: TimestampSchema,
    last_used_at: TimestampSchema.nullable(),
    last4: z.string().openapi({ description: 'the last four characters of the value' }),
    revoked_at: TimestampSchema.nullable(),
  })
  .openapi('ApiKey');

const CreatedKeySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    scopes: z.array(z.enum(SCOPES)),
    created_at: TimestampSchema,
    value: z.string().openapi({ description: 'the key itself, shown only in this answer' }),
  })
  .openapi('CreatedKey');

const PATH_PATTERN = /^\/[A-Za-z0-9_\-./{}:]*\*?$/;

const CreateFaultSchema = z
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

const FaultSchema = z
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

const RequestEntrySchema = z
  .object({
    method: z.string(),
    path: z.string(),
    query: z.string(),
    status: z.number().openapi({ description: '0 when an injected fault dropped the connection' }),
    duration_ms: z.number(),
    at: TimestampSchema,
  })
  .openapi('JournalEntry');

function presentKey(key: ApiKeyRecord) {
  return {
    id: key.id,
    name: key.name,
    scopes: key.scopes,
    created_at: formatTimestamp(key.createdAt),
    last_used_at: key.lastUsedAt === null ? null : formatTimestamp(key.lastUsedAt),
    last4: key.last4,
    revoked_at: key.revokedAt === null ? null : formatTimestamp(key.revokedAt),
  };
}

function presentFault(rule: FaultRule) {
  return {
    id: rule.id,
    method: rule.method,
    path: rule.path,
    status: rule.status,
    code: rule.code,
    retry_after: rule.retryAfter,
    delay_ms: rule.delayMs,
    drop: rule.drop,
    times: rule.times,
    remaining: rule.remaining,
    created_at: formatTimestamp(rule.createdAt),
  };
}

/** Keys, faults, the request journal and reset: the account's own housekeeping. */
export function accountControlRoutes(state: State) {
  const router = createRouter();

  router.openapi(
    createRoute({
      method: 'post',
      path: '/keys',
      tags,
      summary: 'Create an API key; its value is shown once',
      security,
      request: { body: jsonBody(CreateKeySchema) },
      responses: {
        201: jsonResponse(CreatedKeySchema, 'The key and its value'),
        ...errorResponses(...ERRORS),
      },
    }),
    (c) => {
      const { name, scopes } = c.req.valid('json');
      const auth = c.get('auth');
      const value = newKeyValue();
      const key = {
        id: newId('key', auth.now),
        accountId: auth.account.id,
        name,
        scopes: scopes ?? [...SCOPES],
        createdAt: auth.now,
      };
      state.accounts.insertApiKey(key, value);
      return c.json(
        { id: key.id, name, scopes: key.scopes, created_at: formatTimestamp(auth.now), value },
        201,
      );
    },
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/keys',
      tags,
      summary: "The account's keys, newest first (the last four characters only)",
      security,
      responses: {
        200: jsonResponse(z.object({ data: z.array(KeySchema) }), 'Keys'),
        ...errorResponses(...ERRORS),
      },
    }),
    (c) => c.json({ data: state.accounts.keys(c.get('auth').account.id).map(presentKey) }, 200),
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/keys/{id}',
      tags,
      summary: 'Revoke a key, at once',
      security,
      request: { params: IdParam },
      responses: {
        200: jsonResponse(z.object({ id: z.string(), revoked_at: TimestampSchema }), 'Revoked'),
        ...errorResponses(...ERRORS),
      },
    }),
    (c) => {
      const auth = c.get('auth');
      const key = state.accounts.revokeKey(auth.account.id, c.req.valid('param').id, auth.now);
      if (!key?.revokedAt) throw notFound('key', c.req.valid('param').id);
      return c.json({ id: key.id, revoked_at: formatTimestamp(key.revokedAt) }, 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/faults',
      tags,
      summary: 'Inject a fault into matching API requests',
      security,
      request: { body: jsonBody(CreateFaultSchema) },
      responses: { 201: jsonResponse(FaultSchema, 'The rule'), ...errorResponses(...ERRORS) },
    }),
    (c) => {
      const input = c.req.valid('json');
      const auth = c.get('auth');
      if (input.status === undefined && !input.drop && !input.delay_ms) {
        throw new ApiError(422, 'missing_field', 'A fault needs a status, a delay_ms or drop: true.', {
          field: 'status',
        });
      }
      if (input.drop && input.status !== undefined) {
        throw invalidField(
          'drop',
          "'drop' and 'status' exclude each other: a dropped connection has no status.",
        );
      }
      if (input.code !== undefined && input.status === undefined) {
        throw invalidField('code', "'code' goes with a 'status'.");
      }
      const path = input.path.startsWith('/v1/') || input.path === '/v1' ? input.path : `/v1${input.path}`;
      const rule = state.faults.insert({
        id: newId('flt', auth.now),
        accountId: auth.account.id,
        method: input.method ?? null,
        path,
        status: input.status ?? null,
        code: input.status === undefined ? null : (input.code ?? defaultFaultCode(input.status)),
        retryAfter: input.retry_after ?? null,
        delayMs: input.delay_ms ?? 0,
        drop: input.drop ?? false,
        times: input.times ?? null,
        remaining: input.times ?? null,
        createdAt: auth.now,
      });
      return c.json(presentFault(rule), 201);
    },
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/faults',
      tags,
      summary: "The account's fault rules, newest first",
      security,
      responses: {
        200: jsonResponse(z.object({ data: z.array(FaultSchema) }), 'Rules'),
        ...errorResponses(...ERRORS),
      },
    }),
    (c) => c.json({ data: state.faults.list(c.get('auth').account.id).map(presentFault) }, 200),
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/faults/{id}',
      tags,
      summary: 'Remove a fault rule',
      security,
      request: { params: IdParam },
      responses: {
        200: jsonResponse(z.object({ id: z.string(), deleted: z.literal(true) }), 'Removed'),
        ...errorResponses(...ERRORS),
      },
    }),
    (c) => {
      const { id } = c.req.valid('param');
      if (!state.faults.delete(c.get('auth').account.id, id)) throw notFound('fault', id);
      return c.json({ id, deleted: true as const }, 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/faults',
      tags,
      summary: 'Remove every fault rule of the account',
      security,
      responses: {
        200: jsonResponse(z.object({ deleted: z.literal(true) }), 'Removed'),
        ...errorResponses(...ERRORS),
      },
    }),
    (c) => {
      state.faults.deleteAll(c.get('auth').account.id);
      return c.json({ deleted: true as const }, 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/requests',
      tags,
      summary: "The account's recent API requests, newest first",
      security,
      request: { query: LimitQuery },
      responses: {
        200: jsonResponse(z.object({ data: z.array(RequestEntrySchema) }), 'Requests'),
        ...errorResponses(...ERRORS),
      },
    }),
    (c) => {
      const limit = parseLimit(c.req.valid('query').limit, { default: 100, max: 1000 });
      return c.json({ data: state.journal.recent(c.get('auth').account.id, limit) }, 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/reset',
      tags,
      summary: "Remove the account's data and reset its clock; keys and settings stay",
      security,
      responses: {
        200: jsonResponse(z.object({ reset: z.literal(true) }), 'Reset'),
        ...errorResponses(...ERRORS),
      },
    }),
    (c) => {
      resetAccount(state, c.get('auth').account.id);
      return c.json({ reset: true as const }, 200);
    },
  );

  return router;
}
