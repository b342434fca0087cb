import type { Context, MiddlewareHandler } from 'hono';
import { ApiError } from '../core/errors.js';
import type { AppEnv } from './context.js';
import { arrivedOverTls } from './node-adapter.js';

/**
 * Whether the client's request reached us over TLS: the socket decides. With `trustProxy` a
 * TLS-terminating proxy's `X-Forwarded-Proto` wins (its first value, the client-facing hop), as in
 * Express.
 */
export function arrivedOverHttps(c: Context<AppEnv>, trustProxy: boolean): boolean {
  if (trustProxy) {
    const forwarded = c.req.header('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase();
    if (forwarded) return forwarded === 'https';
  }
  return arrivedOverTls(c);
}

/**
 * `--strict-https`: plain-HTTP calls to the API get `403 https_required`, as the real service
 * answers. Mounted on `/v1/*` before authentication, so a key sent in clear is never checked.
 */
export function requireHttps(options: { trustProxy: boolean }): MiddlewareHandler<AppEnv> {
  const message =
    'This sandbox runs in strict HTTPS mode: call the API over HTTPS (the start-up banner shows the HTTPS URL ' +
    'and the certificate to trust).' +
    (options.trustProxy ? '' : ' Behind a TLS-terminating proxy, start the sandbox with --trust-proxy.');
  return (c, next) => {
    if (!arrivedOverHttps(c, options.trustProxy)) throw new ApiError(403, 'https_required', message);
    return next();
  };
}
