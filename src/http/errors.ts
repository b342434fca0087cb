import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Logger } from 'pino';
import { ApiError } from '../core/errors.js';
import {
  insufficientStorage,
  isDatabaseUnavailable,
  isDiskFull,
  serviceUnavailable,
} from '../core/storage-errors.js';
import type { AppEnv } from './context.js';

/** Hono's own exceptions (thrown by its validators and body reading) in the contract's words. */
function fromHttpException(error: HTTPException): ApiError {
  switch (error.status) {
    case 400:
      return new ApiError(400, 'invalid_json', 'The request body is not valid JSON.');
    case 413:
      return new ApiError(400, 'request_too_large', 'The request body is larger than 1 MiB.');
    case 415:
      return new ApiError(
        400,
        'unsupported_content_type',
        'Request bodies must be sent as application/json.',
      );
    default:
      return new ApiError(500, 'internal_error', 'An unexpected error occurred.');
  }
}

export function respondWithError(c: Context, error: ApiError): Response {
  // What was answered, for the middleware that note it (the journal, the request log): also when it
  // came from another error (a 500 for a crash), or from no error thrown at all (a 404 for no route).
  // Not in `c.error`, which stays what was thrown: Hono's middleware read it (methodNotAllowed leaves
  // alone a 404 that an error made).
  (c as Context<AppEnv>).set('answeredError', error);
  for (const [name, value] of Object.entries(error.headers)) c.header(name, value);
  // The core speaks of any status from 400 to 599 (faults choose theirs); every one of them has a body.
  return c.json(error.toBody(), error.status as ContentfulStatusCode);
}

/**
 * The one error handler: ApiErrors go out as they are; anything unexpected is logged with its stack
 * and answered with a bare 500, so no internals ever reach a client. A write refused because the disk
 * is full is a 507: its transaction rolled back, so the client may simply retry later.
 */
export function errorHandler(logger: Logger): ErrorHandler {
  // A full disk refuses every write at once: the log says so once a minute, not once per request.
  const FULL_DISK_LOG_INTERVAL_MS = 60_000;
  let fullDiskLoggedAt = Number.NEGATIVE_INFINITY;
  let refusedSinceLogged = 0;
  // While the database is out of reach every request fails alike: said once a minute too.
  const unreachable = onceAMinute((error, count) =>
    logger.warn(
      { err: error, refused: count },
      'the database cannot be reached: requests are answered 503 until it is back',
    ),
  );
  return (error, c) => {
    if (error instanceof ApiError) return respondWithError(c, error);
    if (error instanceof HTTPException && error.status !== 500)
      return respondWithError(c, fromHttpException(error));
    if (isDiskFull(error)) {
      refusedSinceLogged += 1;
      if (performance.now() - fullDiskLoggedAt >= FULL_DISK_LOG_INTERVAL_MS) {
        fullDiskLoggedAt = performance.now();
        logger.warn(
          { code: (error as { code?: string }).code, refused: refusedSinceLogged },
          'the disk is full: writes are answered 507 until space is freed',
        );
        refusedSinceLogged = 0;
      }
      return respondWithError(c, insufficientStorage());
    }
    if (isDatabaseUnavailable(error)) {
      unreachable.say(error);
      return respondWithError(c, serviceUnavailable());
    }
    logger.error({ err: error, method: c.req.method, path: c.req.path }, 'unexpected error');
    return respondWithError(c, new ApiError(500, 'internal_error', 'An unexpected error occurred.'));
  };
}

/** Says something at most once a minute, with how many times it happened since it last said it. */
function onceAMinute(say: (error: unknown, count: number) => void) {
  let saidAt = Number.NEGATIVE_INFINITY;
  let since = 0;
  return {
    say(error: unknown) {
      since += 1;
      if (performance.now() - saidAt < 60_000) return;
      saidAt = performance.now();
      say(error, since);
      since = 0;
    },
  };
}

export const routeNotFound: NotFoundHandler = (c) =>
  respondWithError(
    c,
    new ApiError(
      404,
      'route_not_found',
      `No route ${c.req.method} ${c.req.path}. ${
        c.req.path === '/v1' || c.req.path.startsWith('/v1/')
          ? 'The API reference'
          : 'Every API route is under /v1; the reference'
      } at /docs (and /openapi.json) lists every route.`,
    ),
  );
