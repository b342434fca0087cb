import { OpenAPIHono } from '@hono/zod-openapi';
import type { ErrorHandler, Handler, MiddlewareHandler, NotFoundHandler } from 'hono';
import { TrieRouter } from 'hono/router/trie-router';
import { chain } from './chain.js';
import type { AppEnv } from './context.js';
import type { Router } from './router.js';

/**
 * The API under its prefix (`/v1`), with the middleware every API request passes (the prelude: body,
 * journal, key, limits, faults). `app.use(`${prefix}/*`, …prelude)` would make Hono match the prelude
 * and the route as separate handlers, and run every request through its promise-making `compose`;
 * here each route is one handler that runs the prelude and then the route (chain.ts), so Hono matches
 * that one and calls it. Paths under the prefix that no route takes pass the prelude too, as they did.
 */
export class ApiMount {
  private readonly paths = new TrieRouter<true>();

  constructor(
    private readonly app: Router,
    private readonly prefix: string,
    private readonly prelude: readonly MiddlewareHandler<AppEnv>[],
    private readonly onError: ErrorHandler<AppEnv>,
  ) {
    // The paths `app.use(`${prefix}/*`)` took, told apart by Hono's own matching.
    this.paths.add('ALL', `${prefix}/*`, true);
  }

  /** Mounts a module's API router under the prefix, its document with it (as `app.route` does). */
  route(router: Router): void {
    const joined = new OpenAPIHono<AppEnv>();
    joined.openAPIRegistry = router.openAPIRegistry;
    // A route that `@hono/zod-openapi` registered itself is a run of entries, one a handler.
    const routes: { method: string; path: string; handlers: Handler<AppEnv>[] }[] = [];
    for (const { method, path, handler } of router.routes) {
      if (method === 'ALL')
        throw new Error(`${this.prefix}${path}: an API router takes routes, not middleware`);
      const last = routes.at(-1);
      if (last?.method === method && last.path === path) last.handlers.push(handler as Handler<AppEnv>);
      else routes.push({ method, path, handlers: [handler as Handler<AppEnv>] });
    }
    for (const { method, path, handlers } of routes)
      joined.on(method, path, chain([...this.prelude, ...handlers], this.onError));
    this.app.route(this.prefix, joined);
  }

  /** The app's not-found handler: under the prefix, after the prelude; elsewhere, `answer` alone. */
  notFound(answer: NotFoundHandler<AppEnv>): NotFoundHandler<AppEnv> {
    const underPrefix = chain([...this.prelude, answer], this.onError);
    return (c) =>
      this.paths.match('ALL', c.req.path)[0].length > 0
        ? (underPrefix(c, async () => {}) as Response | Promise<Response>)
        : answer(c);
  }
}
