import { OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context, TypedResponse } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { JSONParsed } from 'hono/utils/types';
import { ERROR_CODES, type ErrorCode } from '../core/error-codes.js';
import type { JsonText } from '../core/json.js';
import { answerWith } from './answer-headers.js';
import type { AppEnv } from './context.js';
import { validationError } from './validation.js';

export type Router = OpenAPIHono<AppEnv>;

/**
 * A router whose validation failures become the contract's errors instead of zod's default body:
 * `@hono/zod-openapi`'s `defaultHook`, which every route registered with `router.openapi` runs after
 * its validators, and which routers mounted below it inherit.
 */
export function createRouter(): Router {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      // The validator passes the raw input as `data` on failures too, though its type omits it.
      const input = (result as { data?: unknown }).data;
      if (!result.success) throw validationError(result.error, result.target, input);
    },
  });
}

/** The rate-limit headers, described once in the document's `components.headers`. */
export const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': {
    description:
      'The ceiling with the fewest requests left (the key, or the plan per minute or per UTC day): its ' +
      'number of requests per window. On every answer to a request whose key was accepted, errors included.',
    schema: { type: 'integer' as const, minimum: 1 },
  },
  'X-RateLimit-Remaining': {
    description: 'Requests left in that window.',
    schema: { type: 'integer' as const, minimum: 0 },
  },
  'X-RateLimit-Reset': {
    description: "When that window ends, in Unix seconds (on the account's clock).",
    schema: { type: 'integer' as const },
  },
};

const rateLimitHeaderRefs = Object.fromEntries(
  Object.keys(RATE_LIMIT_HEADERS).map((name) => [name, { $ref: `#/components/headers/${name}` }]),
);

const RETRY_AFTER = {
  'Retry-After': {
    description: "Seconds to wait before trying again, in real time, whatever the account clock's speed.",
    required: true,
    schema: { type: 'integer' as const, minimum: 0 },
  },
};

const ALLOW = {
  Allow: {
    description: 'The methods this path takes, such as `GET, POST`',
    required: true,
    schema: { type: 'string' as const },
  },
};

/** Groups of codes that routes share, by what the route does. */
export const ErrorCodes = {
  /** Every POST and PATCH: the body is read and parsed, whether the route takes one or not. */
  body: ['request_too_large', 'unsupported_content_type', 'invalid_json'],
  /** A route whose body is validated. */
  validation: ['missing_field', 'invalid_field'],
  /** A route with query parameters. */
  query: ['invalid_parameter'],
  /** A route that looks a resource up by its path. */
  lookup: ['not_found'],
  /** A route that writes: nothing is changed when the disk is full. */
  write: ['insufficient_storage'],
} as const satisfies Record<string, readonly ErrorCode[]>;

/**
 * Codes every authenticated `/v1` route can answer, whatever it does (400: a NUL character in the path
 * or query; 503: the database, or a fault rule).
 */
const API_CODES = [
  'invalid_parameter',
  'missing_api_key',
  'invalid_api_key',
  'insufficient_scope',
  'host_not_allowed',
  'cross_site_request',
  'https_required',
  'method_not_allowed',
  'rate_limit_exceeded',
  'internal_error',
  'service_unavailable',
] as const satisfies readonly ErrorCode[];

/**
 * Codes every `/_sandbox` control that takes a key can answer: no rate limits, no faults there (400: a
 * NUL character in the path or query).
 */
const CONTROL_CODES = [
  'invalid_parameter',
  'missing_api_key',
  'invalid_api_key',
  'insufficient_scope',
  'host_not_allowed',
  'cross_site_request',
  'method_not_allowed',
  'internal_error',
  'service_unavailable',
] as const satisfies readonly ErrorCode[];

/** Codes a route that takes no key can answer (503: the database cannot be reached). */
const OPEN_CODES = [
  'host_not_allowed',
  'cross_site_request',
  'method_not_allowed',
  'internal_error',
  'service_unavailable',
] as const satisfies readonly ErrorCode[];

type StatusOf<C extends ErrorCode> = Exclude<(typeof ERROR_CODES)[C]['status'], undefined>;

type ErrorResponses<C extends ErrorCode> = Record<
  StatusOf<C>,
  { description: string; content: { 'application/json': { schema: object } } }
>;

const STATUS_TITLES: Record<number, string> = {
  400: 'Bad request',
  401: 'No valid API key',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  422: 'Refused',
  429: 'Rate limit exceeded',
  500: 'Unexpected error',
  503: 'Service unavailable',
  507: 'Insufficient storage',
};

/**
 * The error responses of a route, by status: each names the codes it can carry on this route (in its
 * description, and as the enum its body's `code` is narrowed to, so a typed client knows them).
 */
function errorResponses<C extends ErrorCode>(codes: readonly C[], rateLimited: boolean): ErrorResponses<C> {
  const byStatus = new Map<number, C[]>();
  for (const code of new Set(codes)) {
    const status = ERROR_CODES[code].status;
    if (status === undefined) throw new Error(`${code} has no status of its own`);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<number, object> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const headers = {
      // A request without a valid key was never counted.
      ...(rateLimited && status !== 401 ? rateLimitHeaderRefs : {}),
      ...(status === 429 || status === 503 ? RETRY_AFTER : {}),
      ...(status === 405 ? ALLOW : {}),
    };
    const sorted = [...list].sort();
    responses[status] = {
      // What each code means is said once, in the `ErrorCode` schema.
      description: `${STATUS_TITLES[status] ?? 'Error'}: ${sorted.map((code) => `\`${code}\``).join(', ')}`,
      ...(Object.keys(headers).length ? { headers } : {}),
      content: { 'application/json': { schema: narrowedError(sorted) } },
    };
  }
  return responses as ErrorResponses<C>;
}

/** The `Error` schema with its `code` narrowed to the codes listed. */
const narrowedError = (codes: readonly ErrorCode[]) => ({
  allOf: [
    { $ref: '#/components/schemas/Error' },
    {
      type: 'object',
      required: ['error'],
      properties: {
        error: {
          type: 'object',
          required: ['code'],
          properties: { code: { type: 'string', enum: codes } },
        },
      },
    },
  ],
});

/**
 * The error responses of a `/v1` route: the codes that every one of them can answer (the key, the
 * scope, strict HTTPS, the rate limits, a fault's 503) and the route's own. Each carries the
 * rate-limit headers.
 */
export const apiErrors = <C extends ErrorCode>(...codes: readonly C[]) =>
  errorResponses<C | (typeof API_CODES)[number]>([...API_CODES, ...codes], true);

/** The error responses of a `/_sandbox` control that takes a key: neither rate limited nor faulted. */
export const controlErrors = <C extends ErrorCode>(...codes: readonly C[]) =>
  errorResponses<C | (typeof CONTROL_CODES)[number]>([...CONTROL_CODES, ...codes], false);

/** The error responses of a route that takes no key. */
export const openErrors = <C extends ErrorCode>(...codes: readonly C[]) =>
  errorResponses<C | (typeof OPEN_CODES)[number]>([...OPEN_CODES, ...codes], false);

export const jsonBody = <T>(schema: T, description?: string) => ({
  required: true,
  content: { 'application/json': { schema } },
  ...(description ? { description } : {}),
});

/** A JSON answer of a `/_sandbox` control. */
export const jsonResponse = <T>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

/** A JSON answer of a `/v1` route, with its rate-limit headers. */
export const apiResponse = <T>(schema: T, description: string) => ({
  description,
  headers: rateLimitHeaderRefs,
  content: { 'application/json': { schema } },
});

const binary = z.string().openapi({ format: 'binary' });

/** A file answer (label downloads), in any of the media types given. */
export const fileResponse = (description: string, mediaTypes: readonly string[], rateLimited: boolean) => ({
  description,
  ...(rateLimited ? { headers: rateLimitHeaderRefs } : {}),
  content: Object.fromEntries(mediaTypes.map((type) => [type, { schema: binary }])) as Record<
    string,
    { schema: typeof binary }
  >,
});

/** Every authenticated route's security requirement in the OpenAPI document. */
export const BEARER_SECURITY = [{ bearerAuth: [] }];

/** The `{id}` path parameter of a resource route. */
export const idParam = (example?: string) =>
  z.object({
    id: z.string().openapi({ param: { name: 'id', in: 'path' }, ...(example ? { example } : {}) }),
  });

/**
 * Answers JSON text that was serialised once already (for the event that carries the same object),
 * typed for the route like `c.json`'s answer: the text is exactly what `c.json` would have sent.
 */
export function sendJsonText<T, S extends ContentfulStatusCode>(
  c: Context,
  text: JsonText<T>,
  status: S,
): Response & TypedResponse<JSONParsed<T>, S, 'json'> {
  // Only the phantom type differs from `c.json`'s answer: the bytes are the same.
  return answerWith(c as Context<AppEnv>, text, status, 'application/json') as unknown as Response &
    TypedResponse<JSONParsed<T>, S, 'json'>;
}
