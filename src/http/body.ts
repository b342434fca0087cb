import type { Context, MiddlewareHandler, Next } from 'hono';
import { ApiError } from '../core/errors.js';
import type { AppEnv } from './context.js';
import { bodyTextOf, handBodyTextToHono, handParsedBodyToHono, readBodyText } from './node-adapter.js';

export const MAX_BODY_BYTES = 1024 * 1024;

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

const tooLarge = () =>
  new ApiError(400, 'request_too_large', `The request body is larger than ${MAX_BODY_BYTES} bytes (1 MiB).`);

/**
 * Reads a request body once, first of all: at most 1 MiB, refused while it streams in, before
 * anything buffers it. Requests without a body are not touched, and do not wait.
 */
export const readBody: MiddlewareHandler<AppEnv> = (c, next) => {
  if (!BODY_METHODS.has(c.req.method)) return next();
  const declared = Number(c.req.header('content-length') ?? Number.NaN);
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  return readBodyText(c, MAX_BODY_BYTES).then((text) => {
    if (text === undefined) throw tooLarge();
    handBodyTextToHono(c, text);
    return next();
  });
};

/**
 * Checks the body read by `readBody`, once, when the request is about to reach its route (after the
 * key, the limits and the faults): it must be sent as JSON and be a JSON object. An empty body counts
 * as `{}`, so a POST without one gets the route's own "missing field" errors rather than a parse
 * error. The route's validator gets the parsed value (see node-adapter.ts).
 */
export const requireJsonObjectBody: MiddlewareHandler<AppEnv> = (c, next) => {
  if (!BODY_METHODS.has(c.req.method)) return next();
  const text = bodyTextOf(c);
  if (text === undefined) return c.req.text().then((read) => checkJsonObject(c, read, next));
  return checkJsonObject(c, text, next);
};

function checkJsonObject(c: Context<AppEnv>, text: string, next: Next) {
  if (text.trim() === '') {
    handParsedBodyToHono(c, '{}', {});
    return next();
  }
  const mediaType = (c.req.header('content-type') ?? '').split(';')[0]?.trim() ?? '';
  if (!JSON_MEDIA_TYPE.test(mediaType)) {
    throw new ApiError(
      400,
      'unsupported_content_type',
      `Request bodies must be sent with Content-Type: application/json${mediaType ? `, not ${mediaType}` : ''}.`,
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new ApiError(
      400,
      'invalid_json',
      `The request body is not valid JSON: ${(error as Error).message}.`,
    );
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ApiError(400, 'invalid_json', 'The request body must be a JSON object.');
  }
  handParsedBodyToHono(c, text, body);
  return next();
}
