import { timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { type Caller, isFullKey, type Scope } from '../core/actor.js';
import { ApiError } from '../core/errors.js';
import type { AppEnv } from './context.js';

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * Turns a presented key into its caller, or throws the contract's 401 (`invalid_api_key`): at once
 * when it knows the key without a query (the accounts module keeps keys in memory over SQLite).
 */
export type KeyResolver = (key: string) => Caller | Promise<Caller>;

/** The key an `Authorization` header presents as `Bearer <key>`, if it does. */
export function bearerKey(header: string | undefined): string | undefined {
  const match = header === undefined ? null : BEARER.exec(header);
  return match ? (match[1] as string) : undefined;
}

/**
 * `Authorization: Bearer <key>`: 401 `missing_api_key` without one; otherwise the resolver (the
 * accounts module) says whose key it is, and the caller is set on the request.
 */
export function authenticate(resolveKey: KeyResolver): MiddlewareHandler<AppEnv> {
  // Not async: a caller known at once is set and the request handed on without a promise turn of
  // this step's own, on every request.
  return (c, next) => {
    const key = bearerKey(c.req.header('authorization'));
    if (key === undefined) {
      throw new ApiError(
        401,
        'missing_api_key',
        'Send your API key in the Authorization header: Bearer svc_test_…',
      );
    }
    const caller = resolveKey(key);
    if (caller instanceof Promise)
      return caller.then((found) => {
        c.set('caller', found);
        return next();
      });
    c.set('caller', caller);
    return next();
  };
}

/** 403 `insufficient_scope`, naming the scope, unless the request's key carries it. */
export function requireScope(scope: Scope): MiddlewareHandler<AppEnv> {
  return (c, next) => {
    if (!c.get('caller').scopes.includes(scope)) {
      throw new ApiError(
        403,
        'insufficient_scope',
        `This API key lacks the '${scope}' scope that this request needs.`,
      );
    }
    return next();
  };
}

/**
 * 403 `insufficient_scope` unless the key carries every scope: the account's keys, settings, faults and
 * reset are the account holder's, so a key restricted to reading cannot mint a full one or reset the account.
 */
export const requireFullKey: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!isFullKey(c.get('caller'))) {
    throw new ApiError(
      403,
      'insufficient_scope',
      'This request needs a full API key (all five scopes); this key is restricted to ' +
        `${c.get('caller').scopes.join(', ')}.`,
    );
  }
  await next();
};

/**
 * With `--admin-token`, creating accounts (and reading `/metrics`) needs `Authorization: Bearer
 * <token>`, so a shared deployment's accounts are handed out by whoever holds it. Without one, both
 * are open. `what` is what the token is needed for, for the message.
 */
export function requireAdminToken(
  token: string | undefined,
  what = 'Creating accounts',
): MiddlewareHandler<AppEnv> {
  if (token === undefined) return (_c, next) => next();
  const isToken = tokenCheck(token);
  return async (c, next) => {
    const match = BEARER.exec(c.req.header('authorization') ?? '');
    if (!match) {
      throw new ApiError(
        401,
        'missing_api_key',
        `${what} on this sandbox needs its admin token as a Bearer token.`,
      );
    }
    if (!isToken(match[1] as string))
      throw new ApiError(401, 'invalid_api_key', 'The admin token is not valid.');
    await next();
  };
}

/** The header that carries the admin token beside an account's key. */
export const ADMIN_TOKEN_HEADER = 'x-sandbox-admin-token';

/**
 * Sets `admin` on the request: whether it may do what needs the admin token (change an account's plan
 * or rate limiting). With no token configured, every request may. A token that is sent but wrong is
 * refused at once (`403 admin_token_required`) rather than ignored, so a misconfigured client learns it.
 */
export function readAdminToken(token: string | undefined): MiddlewareHandler<AppEnv> {
  const isToken = token === undefined ? undefined : tokenCheck(token);
  return async (c, next) => {
    const given = c.req.header(ADMIN_TOKEN_HEADER);
    if (isToken && given !== undefined && !isToken(given)) {
      throw new ApiError(
        403,
        'admin_token_required',
        `The ${ADMIN_TOKEN_HEADER} header does not hold this sandbox's admin token.`,
      );
    }
    c.set('admin', isToken === undefined || given !== undefined);
    await next();
  };
}

/** Compares a presented token with the configured one in constant time (for equal lengths). */
function tokenCheck(token: string): (given: string) => boolean {
  const expected = Buffer.from(token);
  return (text) => {
    const given = Buffer.from(text);
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
}
