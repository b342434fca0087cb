import { createHash } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import type { Caller } from '../core/actor.js';
import { ApiError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { bearerKey } from '../http/auth.js';
import type { AppEnv } from '../http/context.js';
import { bodyTextOf, isInApiWireForm } from '../http/node-adapter.js';
import type { RequestJournal } from './journal.js';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** A revoked key of an account, as the accounts module finds it; unknown keys belong to no one. */
export type RevokedKeyResolver = (
  key: string,
) => { accountId: string; keyId: string; now: number } | undefined;

export interface JournalDeps {
  /** The wall clock beside the account's. */
  realNow: () => number;
  revokedKeyOf: RevokedKeyResolver;
}

/**
 * Journals every API request of an account, whatever its outcome. It runs ahead of the key check, so
 * that a request refused for a revoked key is journaled too, in the account the key belonged to; a
 * key that is unknown, malformed or absent belongs to no account and is not kept anywhere.
 */
export function journalRequests(journal: RequestJournal, deps: JournalDeps): MiddlewareHandler<AppEnv> {
  return (c, next) => {
    const started = performance.now();
    const wallAt = deps.realNow();
    // Noted once answered, however the request ended, as a `finally` would; a request that never
    // waits is noted without waiting on a promise either (see http/chain.ts).
    const note = () => noteRequest(c, journal, deps, started, wallAt);
    let answered: ReturnType<typeof next>;
    try {
      answered = next();
    } catch (error) {
      const noted = note();
      if (noted) return noted.then(() => Promise.reject(error));
      throw error;
    }
    if (isPromise(answered)) return answered.finally(note);
    const noted = note();
    return noted ? noted.then(() => answered) : answered;
  };
}

const isPromise = (value: unknown): value is Promise<unknown> =>
  typeof (value as Promise<unknown> | undefined)?.then === 'function';

/** Records the request; a promise only when its body must still be read from Hono. */
function noteRequest(
  c: Context<AppEnv>,
  journal: RequestJournal,
  deps: JournalDeps,
  started: number,
  wallAt: number,
): Promise<void> | undefined {
  const caller = c.get('caller') as Caller | undefined;
  const error = c.error instanceof ApiError ? c.error : undefined;
  const revoked =
    caller === undefined && error?.code === 'invalid_api_key'
      ? revokedKey(c.req.header('authorization'), deps.revokedKeyOf)
      : undefined;
  const who = caller ?? revoked;
  if (!who) return undefined;
  const url = c.req.url;
  const queryStart = url.indexOf('?');
  const status = c.get('dropped') ? 0 : c.res.status;
  // Reading an answer's headers is what has given API answers their form on the wire (see
  // answerApiJsonText); an answer built in that form already carries no Retry-After.
  const retryAfter = isInApiWireForm(c.res)
    ? Number.NaN
    : Number(c.res.headers.get('retry-after') ?? Number.NaN);
  const durationMs = Math.round((performance.now() - started) * 100) / 100;
  const answeredWallAt = deps.realNow();
  const record = (body: string | null): undefined => {
    journal.record(who.accountId, {
      id: newId('req', who.now),
      method: c.req.method,
      path: c.req.path,
      query: queryStart === -1 ? '' : url.slice(queryStart + 1),
      status,
      code: error?.code ?? null,
      durationMs,
      at: who.now,
      wallAt,
      answeredWallAt,
      keyId: who.keyId,
      keyRevoked: revoked !== undefined,
      retryAfter: Number.isFinite(retryAfter) ? retryAfter : null,
      bodySha256: body === null ? null : createHash('sha256').update(body).digest('hex'),
    });
    return undefined;
  };
  if (!BODY_METHODS.has(c.req.method)) return record(null);
  // The body was read by `readBody` before this ran, so this is its text as read.
  const body = bodyTextOf(c);
  return body === undefined ? c.req.text().then(record) : record(body);
}

function revokedKey(header: string | undefined, revokedKeyOf: RevokedKeyResolver) {
  const key = bearerKey(header);
  return key === undefined ? undefined : revokedKeyOf(key);
}
