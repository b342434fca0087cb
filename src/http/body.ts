import type { IncomingMessage } from 'node:http';
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { ApiError } from '../core/errors.js';

export const MAX_BODY_BYTES = 1024 * 1024;

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;

const tooLarge = () =>
  new ApiError(400, 'request_too_large', `The request body is larger than ${MAX_BODY_BYTES} bytes (1 MiB).`);

/** Hono's own limit, for requests that do not come from Node's HTTP server (tests' `app.request`). */
const limitWithHono = bodyLimit({
  maxSize: MAX_BODY_BYTES,
  onError: () => {
    throw tooLarge();
  },
});

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Rejects bodies over 1 MiB while they stream in, before anything buffers them, and reads the body
 * once into Hono's cache. On Node's server the body is read straight from the socket: going through
 * a web `Request` would build one (with its AbortSignal) for every request, a tenth of the cost of a
 * simple GET. Requests without a body are not touched.
 */
export const limitBodySize: MiddlewareHandler = async (c, next) => {
  if (!BODY_METHODS.has(c.req.method)) return next();
  const declared = Number(c.req.header('content-length') ?? Number.NaN);
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (!incoming) return limitWithHono(c, next);
  const text = await readCapped(incoming, MAX_BODY_BYTES);
  // Hono's cache holds promises at run time although its type says otherwise.
  (c.req.bodyCache as Record<string, unknown>).text = Promise.resolve(text);
  return next();
};

function readCapped(incoming: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        incoming.off('data', onData);
        incoming.resume();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    incoming.on('data', onData);
    incoming.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    incoming.once('error', reject);
  });
}

/**
 * Checks a request body once, before any route sees it: a body must be sent as JSON and be a JSON
 * object. An empty body counts as `{}`, so a POST without one gets the route's own "missing field"
 * errors rather than a parse error. The text is left in Hono's body cache for the validators.
 */
export const requireJsonObjectBody: MiddlewareHandler = async (c, next) => {
  if (c.req.method !== 'POST' && c.req.method !== 'PATCH' && c.req.method !== 'PUT') return next();

  const text = await c.req.text();
  if (text.trim() === '') {
    // Hono's cache holds promises at run time although its type says otherwise.
    (c.req.bodyCache as Record<string, unknown>).text = Promise.resolve('{}');
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
  return next();
};
