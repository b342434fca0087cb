import { OpenAPIHono, z } from '@hono/zod-openapi';
import { ErrorSchema } from '../core/schemas.js';
import type { AppEnv } from './context.js';
import { validationError } from './validation.js';

/** A router whose validation failures become the contract's errors instead of zod's default body. */
export function createRouter(): OpenAPIHono<AppEnv> {
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

/** The error responses of a route, for the OpenAPI document. */
export function errorResponses<S extends ErrorStatus>(...statuses: S[]) {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      { description: ERROR_DESCRIPTIONS[status], content: { 'application/json': { schema: ErrorSchema } } },
    ]),
  ) as unknown as Record<
    S,
    { description: string; content: { 'application/json': { schema: typeof ErrorSchema } } }
  >;
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
