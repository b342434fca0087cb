import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { METHOD_NAME_ALL } from 'hono/router';
import { type SandboxMetrics, UNMATCHED_ROUTE } from './metrics.js';

/**
 * Counts and times every request the app answers, by the template of the route that took it
 * (`/v1/shipments/:id`), never its path: ids would make a series each (and are an account's own).
 * Registered first, so that requests refused before their route (a missing key, a foreign `Host`)
 * count under their route too.
 */
export function countRequests(metrics: SandboxMetrics): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    await next();
    metrics.request(c.req.method, routeOf(c), c.res.status, (performance.now() - started) / 1000);
  };
}

/**
 * The route's template, through Hono's `matchedRoutes` (hono/route): of the routes matched, the first
 * registered for a method (middleware is registered for every method, `ALL`). A route's own
 * middleware (an OpenAPI route's `middleware`) shares its template.
 */
function routeOf(c: Context): string {
  return matchedRoutes(c).find((route) => route.method !== METHOD_NAME_ALL)?.path ?? UNMATCHED_ROUTE;
}
