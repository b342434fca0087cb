import { hash } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { Caller } from '../core/actor.js';
import { bearerKey } from '../http/auth.js';
import type { AppEnv } from '../http/context.js';
import { NotedRequest, type RequestJournal } from './journal.js';

/** A revoked key of an account, as the accounts module finds it; unknown keys belong to no one. */
export type RevokedKeyResolver = (
  key: string,
) => Promise<{ accountId: string; keyId: string; now: number } | undefined>;

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
  return createMiddleware<AppEnv>(async (c, next) => {
    const started = performance.now();
    const wallAt = deps.realNow();
    try {
      await next();
    } finally {
      // A promise only when a refused key must be looked up (a revoked one is still the account's):
      // every other request is noted without a promise turn.
      const noting = noteRequest(c, journal, deps, started, wallAt);
      if (noting) await noting;
    }
  });
}

function noteRequest(
  c: Context<AppEnv>,
  journal: RequestJournal,
  deps: JournalDeps,
  started: number,
  wallAt: number,
): Promise<void> | undefined {
  const caller = c.get('caller') as Caller | undefined;
  if (caller !== undefined) {
    record(c, journal, deps, started, wallAt, caller, false);
    return undefined;
  }
  if (c.get('answeredError')?.code !== 'invalid_api_key') return undefined;
  const key = bearerKey(c.req.header('authorization'));
  if (key === undefined) return undefined;
  return deps.revokedKeyOf(key).then((revoked) => {
    if (revoked) record(c, journal, deps, started, wallAt, revoked, true);
  });
}

function record(
  c: Context<AppEnv>,
  journal: RequestJournal,
  deps: JournalDeps,
  started: number,
  wallAt: number,
  who: { accountId: string; keyId: string; now: number },
  keyRevoked: boolean,
): void {
  const error = c.get('answeredError');
  const url = c.req.url;
  const queryStart = url.indexOf('?');
  const status = c.res.status;
  // Only refusals carry Retry-After; reading an answer's headers costs every other request.
  const retryAfter = status >= 400 ? Number(c.res.headers.get('retry-after') ?? Number.NaN) : Number.NaN;
  // The body as `readRequest` read it, before anything else ran.
  const body = c.get('bodyText') as string | undefined;
  journal.record(
    who.accountId,
    new NotedRequest({
      method: c.req.method,
      path: c.req.path,
      query: queryStart === -1 ? '' : url.slice(queryStart + 1),
      status: c.get('dropped') ? 0 : status,
      code: error?.code ?? null,
      field: error?.field ?? null,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
      at: who.now,
      wallAt,
      answeredWallAt: deps.realNow(),
      keyId: who.keyId,
      keyRevoked,
      retryAfter: Number.isFinite(retryAfter) ? retryAfter : null,
      // One-shot: no Hash object a request.
      bodySha256: body === undefined ? null : hash('sha256', body),
    }),
  );
}
