import type { MiddlewareHandler } from 'hono';
import { keyShape } from '../accounts/keys.js';
import type { Scope } from '../accounts/scopes.js';
import type { AccountStore } from '../accounts/store.js';
import { clockNow } from '../clock/clock.js';
import type { AppEnv } from './context.js';
import { ApiError } from './errors.js';

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

    c.set('auth', {
      account: found.account,
      keyId: found.key.id,
      scopes: new Set(found.key.scopes),
      now: clockNow(found.account.clock, realNow()),
    });
    await next();
  };
}

/** 403 `insufficient_scope`, naming the scope, unless the request's key carries it. */
export function requireScope(scope: Scope): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!c.get('auth').scopes.has(scope)) {
      throw new ApiError(
        403,
        'insufficient_scope',
        `This API key lacks the '${scope}' scope that this request needs.`,
      );
    }
    await next();
  };
}
