import type { Context, MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ZodType } from 'zod';
import type { AppEnv } from './context.js';
import { parsedBodyOf } from './node-adapter.js';

/**
 * The validators `@hono/zod-openapi` puts in front of a route (a query, path parameters, a JSON body
 * and its media-type check), by the same rules and with the same answers, but synchronous wherever
 * the input is at hand: theirs are `async` and parse with `safeParseAsync`, which makes every request
 * they see wait on promises (see chain.ts). They read the input as Hono's `validator` does, run the
 * route's hook as `@hono/zod-validator` does, and fall back to waiting only where the original would
 * have to (a body nobody parsed, a schema or a hook that is itself asynchronous).
 */

export type ValidationTarget = 'query' | 'param' | 'json';

type ParseResult = { success: true; data: unknown } | { success: false; error: unknown };

/** A route's hook, as `@hono/zod-openapi` calls it: with the input, the result and the target. */
export type ValidationHook = (
  result: ParseResult & { data?: unknown; target: ValidationTarget },
  c: Context<AppEnv>,
) => unknown;

const isPromise = (value: unknown): value is Promise<unknown> =>
  typeof (value as Promise<unknown> | undefined)?.then === 'function';

/** `value`, or what it resolves to, given to `then`: synchronous unless `value` is a promise. */
const after = <T, R>(value: T | Promise<T>, then: (resolved: T) => R): R | Promise<Awaited<R>> =>
  isPromise(value) ? (value.then(then) as Promise<Awaited<R>>) : then(value);

/** As Hono's `validator` reads a JSON body: only when the media type says JSON. */
const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;
/** As `@hono/zod-openapi` checks a request's media type against a declared JSON body. */
const JSON_REQUEST = /^application\/([a-z-.]+\+)?json(;\s*[a-zA-Z0-9-]+=([^;]+))*$/i;

function inputOf(target: ValidationTarget, c: Context<AppEnv>): unknown {
  switch (target) {
    case 'query':
      return Object.fromEntries(
        Object.entries(c.req.queries()).map(([key, values]) => [
          key,
          values.length === 1 ? values[0] : values,
        ]),
      );
    case 'param':
      return c.req.param();
    case 'json': {
      const contentType = c.req.header('Content-Type');
      const mediaType = contentType ? (contentType.split(';')[0] as string).trim().toLowerCase() : '';
      if (!JSON_MEDIA_TYPE.test(mediaType)) return {};
      const parsed = parsedBodyOf(c);
      if (parsed) return parsed.value;
      return c.req.json().catch(() => {
        throw new HTTPException(400, { message: 'Malformed JSON in request body' });
      });
    }
  }
}

/** zod's synchronous parse, unless the schema itself is asynchronous (zod says so by throwing). */
function parse(schema: ZodType, value: unknown): ParseResult | Promise<ParseResult> {
  try {
    return schema.safeParse(value) as ParseResult;
  } catch {
    return schema.safeParseAsync(value) as Promise<ParseResult>;
  }
}

/** Validates one part of the request and hands the result to `c.req.valid(target)`. */
export function validator(
  target: ValidationTarget,
  schema: ZodType,
  hook: ValidationHook | undefined,
): MiddlewareHandler<AppEnv> {
  return (c, next) =>
    after(inputOf(target, c), (value) =>
      after(parse(schema, value), (result) =>
        after(hook?.({ data: value, ...result, target }, c), (hooked) => {
          if (hooked instanceof Response) return hooked;
          if (hooked && typeof hooked === 'object' && 'response' in hooked)
            return hooked.response as Response;
          if (!result.success) return c.json(result, 400);
          c.req.addValidatedData(target, result.data as object);
          return next();
        }),
      ),
    ) as ReturnType<MiddlewareHandler<AppEnv>>;
}

/**
 * A route that declares a JSON body refuses another media type with 415 (which the error handler
 * words as `unsupported_content_type`); without a Content-Type, it refuses a body that has bytes.
 */
export const jsonMediaTypeGate: MiddlewareHandler<AppEnv> = (c, next) => {
  const contentType = c.req.header('content-type');
  if (contentType) {
    if (!JSON_REQUEST.test(contentType)) throw new HTTPException(415, { message: 'Unsupported Media Type' });
    return next();
  }
  return hasRequestBody(c).then((has) => {
    if (has) throw new HTTPException(415, { message: 'Unsupported Media Type' });
    return next();
  });
};

/** `@hono/zod-openapi`'s own test, as it is: whether the raw request has a body with bytes in it. */
async function hasRequestBody(c: Context<AppEnv>): Promise<boolean> {
  const raw = c.req.raw;
  if (raw.body === null) return false;
  if (raw.bodyUsed) return (await c.req.arrayBuffer()).byteLength > 0;
  const body = raw.clone().body;
  if (body === null) return false;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return false;
      if (value.byteLength > 0) return true;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
