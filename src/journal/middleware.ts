import { createHash } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { Caller } from '../core/actor.js';
import { newId } from '../core/ids.js';
import { bearerKey } from '../http/auth.js';
import type { AppEnv } from '../http/context.js';
import type { RequestJournal } from './journal.js';

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
      await noteRequest(c, journal, deps, started, wallAt);
    }
  });
}

async function noteRequest(
  c: Context<AppEnv>,
  journal: RequestJournal,
  deps: JournalDeps,
  started: number,
  wallAt: number,
): Promise<void> {
  const caller = c.get('caller') as Caller | undefined;
  const error = c.get('answeredError');
  const revoked =
    caller === undefined && error?.code === 'invalid_api_key'
      ? await revokedKey(c.req.header('authorization'), deps.revokedKeyOf)
      : undefined;
  const who = caller ?? revoked;
  if (!who) return;
  const url = c.req.url;
  const queryStart = url.indexOf('?');
  const status = c.res.status;
  // Only refusals carry Retry-After; reading an answer's headers costs every other request.
  const retryAfter = status >= 400 ? Number(c.res.headers.get('retry-after') ?? Number.NaN) : Number.NaN;
  // The body as `readBody` read it, before anything else ran.
  const body = c.get('bodyText') as string | undefined;
  const at = who.now;
  journal.record(who.accountId, {
    // Named when first read (the journal's pages, the report's evidence, a replica's flush): most
    // entries are never read, and a ULID's random part is the costliest field here.
    get id() {
      const id = newId('req', at);
      Object.defineProperty(this, 'id', { value: id, enumerable: true });
      return id;
    },
    method: c.req.method,
    path: c.req.path,
    query: queryStart === -1 ? '' : url.slice(queryStart + 1),
    status: c.get('dropped') ? 0 : status,
    code: error?.code ?? null,
    field: error?.field ?? null,
    durationMs: Math.round((performance.now() - started) * 100) / 100,
    at,
    wallAt,
    answeredWallAt: deps.realNow(),
    keyId: who.keyId,
    keyRevoked: revoked !== undefined,
    retryAfter: Number.isFinite(retryAfter) ? retryAfter : null,
    bodySha256: body === undefined ? null : createHash('sha256').update(body).digest('hex'),
  });
}

function revokedKey(header: string | undefined, revokedKeyOf: RevokedKeyResolver) {
  const key = bearerKey(header);
  return key === undefined ? undefined : revokedKeyOf(key);
}
