import { timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { keyShape } from '../accounts/keys.js';
import type { AccountStore } from '../accounts/store.js';
import { clockNow } from '../clock/clock.js';
import type { Scope } from '../core/actor.js';
import { ApiError } from '../core/errors.js';
import type { AppEnv } from './context.js';

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * Resolves `Authorization: Bearer <key>` to the key's account and reads the account's clock once.
 * 401 `missing_api_key` without the header; 401 `invalid_api_key` for a malformed, unknown, revoked
 * or live key.
 */
export function authenticate(
  accounts: AccountStore,
  realNow: () => number = Date.now,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const header = c.req.header('authorization');
    const match = header === undefined ? null : BEARER.exec(header);
    if (!match) {
      throw new ApiError(401, 'missing_api_key', 'Send your API key as Authorization: Bearer svc_test_….');
    }
    const value = match[1] as string;
    const shape = keyShape(value);
    if (shape === 'live') {
      throw new ApiError(
        401,
        'invalid_api_key',
        'This is a live key (svc_live_…). The sandbox takes test keys (svc_test_…) only.',
      );
    }
    const found = shape === 'malformed' ? undefined : accounts.findByKey(value);
    if (!found) throw new ApiError(401, 'invalid_api_key', 'The API key is not valid.');
    if (found.key.revokedAt !== null)
      throw new ApiError(401, 'invalid_api_key', 'The API key has been revoked.');

    const now = clockNow(found.account.clock, realNow());
    // "Last used" to the second is all anyone reads; writing it once a second keeps writes off the hot path.
    if (found.key.lastUsedAt === null || now - found.key.lastUsedAt >= 1000 || now < found.key.lastUsedAt) {
      accounts.touchKey(found.key.id, now);
    }
    c.set('auth', { account: found.account, keyId: found.key.id, scopes: found.key.scopes, now });
    await next();
  };
}

/** 403 `insufficient_scope`, naming the scope, unless the request's key carries it. */
export function requireScope(scope: Scope): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!c.get('auth').scopes.includes(scope)) {
      throw new ApiError(
        403,
        'insufficient_scope',
        `This API key lacks the '${scope}' scope that this request needs.`,
      );
    }
    await next();
  };
}

/**
 * With `--admin-token`, creating accounts needs `Authorization: Bearer <token>`, so a shared
 * deployment's accounts are handed out by whoever holds it. Without one, creation is open.
 */
export function requireAdminToken(token: string | undefined): MiddlewareHandler<AppEnv> {
  if (token === undefined) return (_c, next) => next();
  const expected = Buffer.from(token);
  return async (c, next) => {
    const match = BEARER.exec(c.req.header('authorization') ?? '');
    if (!match) {
      throw new ApiError(
        401,
        'missing_api_key',
        'Creating accounts on this sandbox needs its admin token as a Bearer token.',
      );
    }
    const given = Buffer.from(match[1] as string);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new ApiError(401, 'invalid_api_key', 'The admin token is not valid.');
    }
    await next();
  };
}
