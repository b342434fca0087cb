import { TLSSocket } from 'node:tls';
import type { HttpBindings } from '@hono/node-server';
import type { Context, MiddlewareHandler } from 'hono';
import type { Config } from '../config.js';
import { ApiError } from '../core/errors.js';

/**
 * Whether the client's request reached us over TLS. The socket decides, never the request's URL:
 * @hono/node-server takes the scheme of an absolute-form request line (`GET https://… HTTP/1.1`) as
 * the client wrote it. With `trustProxy` a TLS-terminating proxy's `X-Forwarded-Proto` wins (its
 * first value, the client-facing hop), as in Express. No socket (`app.request` in tests) is plain HTTP.
 */
export function arrivedOverHttps(c: Context, trustProxy: boolean): boolean {
  if (trustProxy) {
    const forwarded = c.req.header('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase();
    if (forwarded) return forwarded === 'https';
  }
  const socket = (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket;
  return socket instanceof TLSSocket && socket.encrypted;
}

/**
 * `--strict-https`: plain-HTTP calls to the API get `403 https_required`, as the real service
 * answers. Mounted on `/v1/*` before authentication, so a key sent in clear is never checked.
 */
export function requireHttps(options: Pick<Config, 'trustProxy'>): MiddlewareHandler {
  const message =
    'This sandbox runs in strict HTTPS mode: call the API over HTTPS (the start-up banner shows the HTTPS URL ' +
    'and the certificate to trust).' +
    (options.trustProxy ? '' : ' Behind a TLS-terminating proxy, start the sandbox with --trust-proxy.');
  return async (c, next) => {
    if (!arrivedOverHttps(c, options.trustProxy)) throw new ApiError(403, 'https_required', message);
    await next();
  };
}
