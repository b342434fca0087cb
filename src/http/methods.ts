import type { NotFoundHandler } from 'hono';
import { TrieRouter } from 'hono/router/trie-router';
import type { RouterRoute } from 'hono/types';
import { ApiError } from '../core/errors.js';
import { respondWithError, routeNotFound } from './errors.js';

/** How `Allow` lists methods: the usual reading order rather than the order routes were mounted in. */
const METHOD_ORDER = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

const byUsualOrder = (a: string, b: string) => {
  const rank = (method: string) => {
    const i = METHOD_ORDER.indexOf(method);
    return i === -1 ? METHOD_ORDER.length : i;
  };
  // Method names are ASCII tokens: compared by code unit (`localeCompare` would load ICU's collator).
  return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
};

/**
 * The methods each mounted path takes. Hono's router only says that nothing matched a method and a
 * path together; this asks Hono's own trie router, over the same patterns, which methods the path
 * alone matches, so a known path with another method is told apart from no path at all.
 */
export class PathMethods {
  private readonly router = new TrieRouter<string>();

  /** `routes` as Hono lists them (`app.routes`); middleware (method `ALL`) mounts no path of its own. */
  constructor(routes: readonly RouterRoute[]) {
    const seen = new Set<string>();
    for (const { method, path } of routes) {
      const key = `${method} ${path}`;
      if (method === 'ALL' || method === 'HEAD' || method === 'OPTIONS' || seen.has(key)) continue;
      seen.add(key);
      this.router.add('ALL', path, method);
    }
  }

  /** The methods `path` takes, HEAD and OPTIONS aside; none when no route has the path. */
  of(path: string): string[] {
    const [matches] = this.router.match('GET', path);
    return [...new Set(matches.map(([method]) => method))].sort(byUsualOrder);
  }
}

/**
 * The app's not-found handler: `405 method_not_allowed` with `Allow` when the path exists with other
 * methods, else `404 route_not_found`. The routes are read on the first unmatched request, once the
 * app has every route mounted.
 */
export function methodNotAllowedOrRouteNotFound(routes: () => readonly RouterRoute[]): NotFoundHandler {
  let paths: PathMethods | undefined;
  return (c) => {
    paths ??= new PathMethods(routes());
    const allowed = paths.of(c.req.path);
    if (allowed.length === 0) return routeNotFound(c);
    const allow = allowed.join(', ');
    return respondWithError(
      c,
      new ApiError(
        405,
        'method_not_allowed',
        `${c.req.method} is not allowed on ${c.req.path}; it takes ${allow}.`,
        { headers: { Allow: allow } },
      ),
    );
  };
}
