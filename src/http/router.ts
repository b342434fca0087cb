import { OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context, TypedResponse } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { JSONParsed } from 'hono/utils/types';
import type { JsonText } from '../core/json.js';
import { ErrorSchema } from '../core/schemas.js';
import type { AppEnv } from './context.js';
import { validationError } from './validation.js';

export type Router = OpenAPIHono<AppEnv>;

/** A router whose validation failures become the contract's errors instead of zod's default body. */
export function createRouter(): Router {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      // The validator passes the raw input as `data` on failures too, though its type omits it.
      const input = (result as { data?: unknown }).data;
      if (!result.success) throw validationError(result.error, result.target, input);
    },
  });
}

const ERROR_DESCRIPTIONS = {
  400: 'Bad request: invalid JSON, content type, body size or query parameter',
  401: 'Missing or invalid API key',
  403: 'The key lacks the scope this route needs',
  404: 'No such resource in this account',
  422: 'Validation failed; `field` names the offending field',
  429: 'Rate limit exceeded',
  500: 'Unexpected error',
} as const;

type ErrorStatus = keyof typeof ERROR_DESCRIPTIONS;

const errorContent = { 'application/json': { schema: ErrorSchema } };

/**
 * Every path answers the methods it does not take with 405, so every operation lists it: a document
 * has no place for a path's own responses.
 */
const METHOD_NOT_ALLOWED = {
  description:
    'This path does not take the method used (`method_not_allowed`); the `Allow` header lists the methods it takes',
  headers: {
    Allow: {
      description: 'The methods this path takes, such as `GET, POST`',
      schema: { type: 'string' as const },
    },
  },
  content: errorContent,
};

/** The error responses of a route, for the OpenAPI document; 405 comes with every route. */
export function errorResponses<S extends ErrorStatus>(...statuses: S[]) {
  return {
    ...Object.fromEntries(
      statuses.map((status) => [status, { description: ERROR_DESCRIPTIONS[status], content: errorContent }]),
    ),
    405: METHOD_NOT_ALLOWED,
  } as unknown as Record<S, { description: string; content: typeof errorContent }> & {
    405: typeof METHOD_NOT_ALLOWED;
  };
}

/** The statuses every authenticated API route can answer with. */
export const COMMON_ERRORS = [400, 401, 403, 429, 500] as const;

export const jsonBody = <T>(schema: T, description?: string) => ({
  required: true,
  content: { 'application/json': { schema } },
  ...(description ? { description } : {}),
});

export const jsonResponse = <T>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

/** Every authenticated route's security requirement in the OpenAPI document. */
export const BEARER_SECURITY = [{ bearerAuth: [] }];

/** The `{id}` path parameter of a resource route. */
export const idParam = (example?: string) =>
  z.object({
    id: z.string().openapi({ param: { name: 'id', in: 'path' }, ...(example ? { example } : {}) }),
  });

const JSON_HEADERS = { 'content-type': 'application/json' };

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
  return c.body(text, status, JSON_HEADERS) as unknown as Response & TypedResponse<JSONParsed<T>, S, 'json'>;
}
