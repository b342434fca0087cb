import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';

/**
 * Sets headers on whatever the request ends up answering, success or error, before the route has
 * answered. On Node's server they go straight onto Node's response, which merges them into the
 * headers the route sends: Hono's `c.header` (or `c.res.headers` afterwards) turns each answer's
 * headers into a web `Headers` object, a tenth of the cost of a whole API call. Without a Node
 * response (`app.request` in tests) Hono's own way is used.
 */
export function presetHeaders(c: Context, headers: Readonly<Record<string, string>>): void {
  const outgoing = (c.env as Partial<HttpBindings> | undefined)?.outgoing;
  for (const name in headers) {
    const value = headers[name] as string;
    if (outgoing) outgoing.setHeader(name, value);
    else c.header(name, value);
  }
}
