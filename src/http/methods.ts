import type { Context } from 'hono';
import { ApiError } from '../core/errors.js';
import { respondWithError } from './errors.js';

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
 * The answer of Hono's `methodNotAllowed` middleware (`hono/method-not-allowed`), which tells a known
 * path called with another method from a path no route has: the contract's `405 method_not_allowed`,
 * whose `Allow` lists the path's methods, HEAD and OPTIONS aside (Hono counts HEAD with GET).
 */
export function methodNotAllowed(c: Context, methods: readonly string[]): Response {
  const allow = methods
    .filter((method) => method !== 'HEAD' && method !== 'OPTIONS')
    .sort(byUsualOrder)
    .join(', ');
  return respondWithError(
    c,
    new ApiError(
      405,
      'method_not_allowed',
      `${c.req.method} is not allowed on ${c.req.path}; it takes ${allow}.`,
      {
        headers: { Allow: allow },
      },
    ),
  );
}
