import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from './context.js';

/**
 * The headers every answer to a request carries (`X-Content-Type-Options`, the rate limits), kept as
 * a plain object until the answer is made. An answer made by `answerWith` is built with them in one
 * go; any other answer (an error, a file, a page) gets them afterwards through `c.res.headers`, as
 * Hono's own secure-headers middleware sets its headers.
 *
 * Why not `c.header()`: it makes the web `Headers` object that Hono and its Node adapter then convert
 * back for Node, and an answer with more than one header does the same. On the API's everyday answers
 * that conversion, with the lookups on it, was a tenth of a read's CPU (docs/benchmark.md). Names are
 * lower case and in the order `Headers` gives them, so the bytes on the wire are the same either way.
 */

/**
 * `X-Content-Type-Options: nosniff` on every answer, so that a browser never reads a JSON body (which
 * echoes what clients sent) as a script or a page; then whatever `addAnswerHeaders` adds. Hono's
 * secure-headers middleware would set that one header too, on a `Headers` object (see above); the
 * rest of its defaults (a same-origin resource policy, HSTS, a frame policy) would change what clients
 * of an API may do, and the pages set their own policies (src/dashboard/pages.ts).
 */
export const answerHeaders = (): MiddlewareHandler<AppEnv> => async (c, next) => {
  c.set('answerHeaders', { 'x-content-type-options': 'nosniff' });
  await next();
  // The answer may have been replaced since it was made (an error thrown after it): only the very
  // answer `answerWith` made carries the headers already.
  const made = c.get('answeredWith');
  if (made === c.res) return;
  const headers = c.res.headers;
  // Hono copies a replaced answer's headers onto the one replacing it: its length too, which is not
  // this answer's (Node's adapter works out the right one).
  if (made) headers.delete('content-length');
  for (const [name, value] of Object.entries(c.get('answerHeaders'))) headers.set(name, value);
};

/** Adds headers to the request's answer, whatever it turns out to be. */
export function addAnswerHeaders(c: Context<AppEnv>, headers: Record<string, string>): void {
  const kept = c.get('answerHeaders');
  if (kept) Object.assign(kept, headers);
  else c.set('answerHeaders', { ...headers });
}

/**
 * The answer `body` with the request's answer headers and `contentType`, as plain values all the way
 * to Node: a `Response` whose headers are a plain object goes out through `@hono/node-server`'s
 * fast path untouched. Headers set with `c.header()` are not in it: add them with `addAnswerHeaders`.
 */
export function answerWith(c: Context<AppEnv>, body: string, status: number, contentType: string): Response {
  const extra = c.get('answerHeaders');
  const headers: Record<string, string> = { 'content-type': contentType, ...extra };
  // Its length named here puts it where Hono's answers have it, before Node's `Date`; an answer to
  // HEAD (which Hono makes from this one, without its body) names none, as Hono's own do not.
  if (c.req.method !== 'HEAD') headers['Content-Length'] = String(Buffer.byteLength(body));
  const answer = new Response(body, { status, headers });
  if (extra) c.set('answeredWith', answer);
  return answer;
}
