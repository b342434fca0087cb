import type { Context, Next } from 'hono';
import { createMiddleware } from 'hono/factory';
import { ApiError, invalidField } from '../core/errors.js';
import type { AppEnv } from './context.js';
import { readBodyText } from './node-adapter.js';

export const MAX_BODY_BYTES = 1024 * 1024;

/** As Hono's validator tells a JSON body: only when the media type says JSON. */
const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

const tooLarge = () =>
  new ApiError(400, 'request_too_large', `The request body is larger than ${MAX_BODY_BYTES} bytes (1 MiB).`);

const mediaTypeOf = (contentType: string | undefined) => (contentType ?? '').split(';')[0]?.trim() ?? '';

/** The `charset` parameter of a Content-Type, lower-cased and unquoted, if it has one. */
const charsetOf = (contentType: string | undefined) =>
  /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '')?.[1]?.toLowerCase();

/**
 * Hands `text` back to Hono as the request's body, for the route's validator to read: as the text
 * `c.req.text()` and `c.req.json()` answer from (`bodyCache`, the public field `HonoRequest` keeps
 * a body it has read in). The body's stream was read by `readRequest`. A fresh `Request` carrying the
 * text (as Hono's `bodyLimit` does) would cost a creation about a fifth of its CPU in undici's
 * constructor (docs/benchmark.md); `test/http-body.test.ts` fails if Hono stops reading it.
 */
function handBack(c: Context<AppEnv>, text: string): void {
  // Hono declares the cache's entries as values but keeps (and awaits) promises of them.
  (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(text);
}

/**
 * Blanks sent as something other than JSON stay a body that `@hono/zod-openapi`'s media type check
 * can see: it looks for one in `c.req.raw` (not the cache), and refuses a body without a declared
 * media type, where a route takes one. Rare enough to pay for a `Request` carrying the bytes.
 */
function keepAsRequestBody(c: Context<AppEnv>, text: string): void {
  const raw = c.req.raw;
  c.req.raw = new Request(raw.url, { method: raw.method, headers: raw.headers, body: Buffer.from(text) });
}

/**
 * Reads what a request carries, first of all. Its body, once: at most 1 MiB, refused while it streams
 * in, before anything buffers it. Then its URL: a NUL character (`%00`) in the path or the query names
 * nothing the sandbox can hold (PostgreSQL's text cannot), `400 invalid_parameter` on every engine.
 * One step, as every request passes it; a request without a body is handed on without a promise turn
 * of this step's own (the steps here are not async for that reason, as a `GET` passes them all).
 */
export const readRequest = createMiddleware<AppEnv>((c, next) => {
  if (BODY_METHODS.has(c.req.method)) return readThenGoOn(c, next);
  refuseNulInUrl(c);
  return next();
});

async function readThenGoOn(c: Context<AppEnv>, next: Next): Promise<void> {
  const declared = Number(c.req.header('content-length') ?? Number.NaN);
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  let refusal = unreadable(c);
  let text: string | undefined;
  try {
    text = await readBodyText(c, MAX_BODY_BYTES);
  } catch (error) {
    if (!(error instanceof ApiError && error.code === 'invalid_json')) throw error;
    refusal ??= error;
    text = '';
  }
  if (text === undefined) throw tooLarge();
  // Refused once the request is known to be its caller's (`requireJsonObjectBody`), so that it is
  // journaled and counted as any other bad body is; none of it reaches a route meanwhile.
  if (refusal) c.set('bodyRefusal', refusal);
  c.set('bodyText', refusal ? '' : text);
  handBack(c, refusal ? '' : text);
  refuseNulInUrl(c);
  await next();
}

/** A body the sandbox cannot read as the JSON text it was sent as: compressed, or in another charset. */
function unreadable(c: Context<AppEnv>): ApiError | undefined {
  const encoding = c.req.header('content-encoding')?.trim().toLowerCase();
  // Not decoded here: a compressed body would be read as text it is not.
  if (encoding && encoding !== 'identity')
    return new ApiError(
      400,
      'unsupported_content_type',
      `Request bodies must be sent uncompressed (no Content-Encoding), not ${encoding}.`,
    );
  const charset = charsetOf(c.req.header('content-type'));
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')
    return new ApiError(
      400,
      'unsupported_content_type',
      `Request bodies are read as UTF-8, as JSON is; charset=${charset} is not taken.`,
    );
  return undefined;
}

/**
 * Checks the body read by `readRequest`, once, when the request is about to reach its route (after the
 * key, the limits and the faults): it must be sent as JSON and be a JSON object. An empty body counts
 * as `{}`, so a POST without one gets the route's own "missing field" errors rather than a parse
 * error; without a JSON media type it is left empty, which Hono's validator reads as `{}` too.
 */
export const requireJsonObjectBody = createMiddleware<AppEnv>((c, next) => {
  const refusal = c.get('bodyRefusal');
  if (refusal) throw refusal;
  const text = c.get('bodyText');
  if (text === undefined) return next();
  const mediaType = mediaTypeOf(c.req.header('content-type'));
  if (text.trim() === '') {
    if (JSON_MEDIA_TYPE.test(mediaType)) handBack(c, '{}');
    else if (text !== '') keepAsRequestBody(c, text);
    return next();
  }
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
  const nul = text.includes('\\u0000') ? pathOfNul(body) : undefined;
  if (nul !== undefined)
    throw invalidField(
      nul,
      `'${nul}' must not contain the NUL character (U+0000), which no text column can hold.`,
    );
  return next();
});

/**
 * The dotted path of the first string (or key) holding a NUL character, which PostgreSQL cannot
 * store in text: refused on every engine, so that both answer alike.
 */
function pathOfNul(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path || 'body' : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, inner] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (key.includes('\u0000')) return at;
    const found = pathOfNul(inner, at);
    if (found !== undefined) return found;
  }
  return undefined;
}

function refuseNulInUrl(c: Context<AppEnv>): void {
  if (c.req.url.includes('%00'))
    throw new ApiError(
      400,
      'invalid_parameter',
      'The path and query must not contain the NUL character (%00).',
    );
}
