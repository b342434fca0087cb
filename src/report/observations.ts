import { MINUTE } from '../core/time.js';
import type { Sql } from '../db/sql.js';
import type { JournaledRequest } from '../journal/journal.js';
import type { LabelUrlFetch } from '../labels/service.js';
import { MAGIC_TRACKING_NUMBERS } from '../tracking/magic-numbers.js';

/**
 * What the integration report needs of a client's requests beyond the journal's last 1,000: each
 * account's notable moments (a 429 and the call after it, a POST left uncertain and what followed, a
 * refused request and the next one to its route, bursts of tracking polls, label URLs fetched, keys
 * used after revocation), noted as the journal records each request.
 *
 * Everything here is bounded per account, whatever the client does: each kind of occurrence keeps a
 * count and its first EVIDENCE_KEPT examples; the moments still waiting for what follows them keep
 * at most a few dozen entries each (the limits below), the oldest making way. Like the journal, one
 * sandbox keeps it in memory (it starts empty after a restart) and replicas over PostgreSQL in the
 * database; a reset of the account forgets it.
 */

/** Examples kept of each kind of occurrence: the report shows them as evidence. */
export const EVIDENCE_KEPT = 5;
/** Keys with a 429 not yet followed by another call (an account rarely has more than a few keys). */
const PENDING_429_KEYS = 100;
/** POSTs that failed with a 5xx or a dropped connection and have not been sent again. */
const UNCERTAIN_POSTS = 50;
/** Routes whose last request was refused as invalid, waiting for the next request to them. */
const REFUSED_ROUTES = 50;
/** Tracking numbers whose recent fetches are counted. */
const POLLED_NUMBERS = 100;
/** Polling bursts kept (the latest): each is judged against the deliveries when a report is made. */
const BURSTS_KEPT = 20;

/** How many fetches of one tracking number within a minute (by the wall clock) make a burst of polling. */
export const POLLS_PER_MINUTE = 10;

/**
 * The POSTs that create something, each with the reads that would show whether it did: a retry of
 * one after an uncertain failure is judged by `checks_before_retrying`. `POST /v1/rates` changes
 * nothing, so retrying it is always safe.
 */
export const CREATING_POSTS: Readonly<Record<string, readonly string[]>> = {
  '/v1/shipments': ['/v1/shipments'],
  '/v1/labels': ['/v1/labels', '/v1/shipments'],
  '/v1/webhooks': ['/v1/webhooks'],
};

/**
 * Refusals that depend only on the request itself (its path, query and body): the same request sent
 * again is refused the same way. `unsupported_content_type` depends on a header, and 404s, conflicts
 * and state errors on what else exists, so they are not among them.
 */
const REFUSED_FOR_WHAT_IT_SAYS = new Set([
  'invalid_json',
  'invalid_parameter',
  'missing_field',
  'invalid_field',
  'invalid_address',
  'invalid_carrier',
  'invalid_service',
]);

const MAGIC_NUMBERS = new Set(MAGIC_TRACKING_NUMBERS.map((magic) => magic.number));
const TRACKING_PATH = /^\/v1\/tracking\/([^/]+)$/;

/** A count of occurrences and the first few of them. */
export class Tally<T> {
  count = 0;
  readonly kept: T[] = [];

  add(occurrence: T): void {
    this.count += 1;
    if (this.kept.length < EVIDENCE_KEPT) this.kept.push(occurrence);
  }
}

/** A request, what came of it, and (for a retry after an uncertain failure) the read in between. */
export interface RequestPair {
  first: JournaledRequest;
  next: JournaledRequest;
  between?: JournaledRequest | undefined;
}

/** A tracking number fetched POLLS_PER_MINUTE times within a minute: `last` completed the burst. */
export interface PollingBurst {
  trackingNumber: string;
  count: number;
  /** When the burst's first fetch arrived, by the wall clock. */
  firstWallAt: number;
  last: JournaledRequest;
}

export interface LabelUrlNote extends LabelUrlFetch {
  wallAt: number;
}

/** One account's observations. */
export class AccountObservations {
  /** Requests with keys valid at the time. */
  requests = 0;
  readonly revokedKeyUses = new Tally<JournaledRequest>();

  readonly pending429s = new Map<string, JournaledRequest>();
  readonly earlyAfter429 = new Tally<RequestPair>();
  readonly waitedAfter429 = new Tally<RequestPair>();

  readonly uncertainPosts = new Map<string, { failed: JournaledRequest; checkedBy?: JournaledRequest }>();
  readonly blindRetries = new Tally<RequestPair>();
  readonly checkedRetries = new Tally<RequestPair>();

  readonly refusedRoutes = new Map<string, JournaledRequest>();
  readonly repeatedRefusals = new Tally<RequestPair>();
  readonly changedAfterRefusal = new Tally<RequestPair>();

  /** Per tracking number, when its fetches of the last minute arrived (wall clock). */
  readonly recentPolls = new Map<string, number[]>();
  readonly pollingBursts: PollingBurst[] = [];
  burstCount = 0;

  readonly expiredLabelUrls = new Tally<LabelUrlNote>();
  readonly freshLabelUrls = new Tally<LabelUrlNote>();
}

/**
 * Every account's observations, wherever they are kept: in this process's memory on one sandbox
 * (ClientObservations), or in the database over PostgreSQL (postgres-observations.ts), where every
 * replica's requests and label fetches reach them.
 */
export interface Observations {
  /** What has been observed of the account so far (nothing yet is an empty record). */
  of(accountId: string): AccountObservations | Promise<AccountObservations>;
  /** Notes a fetch of a label's pre-signed URL (requests come from the journal). */
  noteLabelUrl(fetch: LabelUrlFetch): void;
  /** Forgets the account's observations (a reset), through the reset's transaction. */
  deleteAccount(tx: Sql, accountId: string): void | Promise<void>;
}

/** Every account's observations in memory, fed by the request journal and the label CDN. */
export class ClientObservations implements Observations {
  private readonly accounts = new Map<string, AccountObservations>();

  constructor(private readonly realNow: () => number) {}

  /** What has been observed of the account (nothing yet is an empty record, not kept). */
  of(accountId: string): AccountObservations {
    return this.accounts.get(accountId) ?? new AccountObservations();
  }

  forget(accountId: string): void {
    this.accounts.delete(accountId);
  }

  deleteAccount(_tx: Sql, accountId: string): void {
    this.forget(accountId);
  }

  noteRequest(accountId: string, request: JournaledRequest): void {
    noteRequest(this.kept(accountId), request);
  }

  noteLabelUrl(fetch: LabelUrlFetch): void {
    noteLabelUrl(this.kept(fetch.accountId), { ...fetch, wallAt: this.realNow() });
  }

  private kept(accountId: string): AccountObservations {
    let account = this.accounts.get(accountId);
    if (!account) {
      account = new AccountObservations();
      this.accounts.set(accountId, account);
    }
    return account;
  }
}

/** Takes a request in: the journal's requests of an account are fed to this in the order they were answered. */
export function noteRequest(account: AccountObservations, request: JournaledRequest): void {
  if (request.keyRevoked) {
    account.revokedKeyUses.add(request);
    return;
  }
  account.requests += 1;
  noteRetryAfter(account, request);
  noteRetryOfUncertainPost(account, request);
  noteRepeatOfRefusal(account, request);
  notePolling(account, request);
}

export function noteLabelUrl(account: AccountObservations, note: LabelUrlNote): void {
  (note.expired ? account.expiredLabelUrls : account.freshLabelUrls).add(note);
}

/**
 * An account's observations as JSON: maps as their entries, the rest as it is. What a field holds
 * is read back by the kind of field a new record has (observationsFromJson), so that a field added
 * later starts empty in a record written before it.
 */
export function observationsToJson(account: AccountObservations): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(account).map(([name, value]) => [name, value instanceof Map ? [...value] : value]),
  );
}

export function observationsFromJson(json: Readonly<Record<string, unknown>>): AccountObservations {
  const account = new AccountObservations();
  const fields = account as unknown as Record<string, unknown>;
  for (const [name, blank] of Object.entries(account)) {
    const value = json[name];
    if (value === undefined) continue;
    if (blank instanceof Map) for (const [key, entry] of value as [unknown, unknown][]) blank.set(key, entry);
    else if (blank instanceof Tally) {
      const tally = value as { count: number; kept: unknown[] };
      blank.count = tally.count;
      blank.kept.push(...tally.kept);
    } else if (Array.isArray(blank)) blank.push(...(value as unknown[]));
    else fields[name] = value;
  }
  return account;
}

/** Sets `key` in a map kept to `limit` entries: the oldest makes way. */
function setBounded<K, V>(map: Map<K, V>, key: K, value: V, limit: number): void {
  map.delete(key);
  if (map.size >= limit) map.delete(map.keys().next().value as K);
  map.set(key, value);
}

/**
 * `respects_retry_after`: a 429 with `Retry-After` waits for the next call of the same key that
 * arrived after the 429 was answered (calls already on their way are not judged); that call was
 * early if less real time than `Retry-After` had passed. The times are whole milliseconds, and over
 * loopback a client's retry can arrive in the very millisecond its 429 was answered: that counts as
 * after (a strict comparison left such a careless client unjudged, now and then).
 */
function noteRetryAfter(account: AccountObservations, request: JournaledRequest): void {
  const refused = account.pending429s.get(request.keyId);
  if (refused && request.wallAt >= refused.answeredWallAt) {
    account.pending429s.delete(request.keyId);
    const waitedMs = request.wallAt - refused.answeredWallAt;
    const early = waitedMs < (refused.retryAfter ?? 0) * 1000;
    (early ? account.earlyAfter429 : account.waitedAfter429).add({ first: refused, next: request });
  }
  if (request.status === 429 && request.retryAfter !== null) {
    setBounded(account.pending429s, request.keyId, request, PENDING_429_KEYS);
  }
}

/**
 * `checks_before_retrying`: a creating POST whose answer leaves its effect uncertain (a 5xx other
 * than 507, which guarantees nothing was written, or a dropped connection) waits for the same POST
 * (same path, same body) to come again; a successful read of what it creates in between is a check.
 */
function noteRetryOfUncertainPost(account: AccountObservations, request: JournaledRequest): void {
  const { uncertainPosts } = account;
  if (request.method === 'GET' && request.status >= 200 && request.status < 300 && uncertainPosts.size > 0) {
    for (const pending of uncertainPosts.values()) {
      if (pending.checkedBy || request.wallAt < pending.failed.answeredWallAt) continue;
      const reads = CREATING_POSTS[pending.failed.path] ?? [];
      if (reads.some((root) => request.path === root || request.path.startsWith(`${root}/`)))
        pending.checkedBy = request;
    }
    return;
  }
  if (request.method !== 'POST' || CREATING_POSTS[request.path] === undefined) return;
  const key = `${request.path} ${request.bodySha256}`;
  const pending = uncertainPosts.get(key);
  if (pending) {
    uncertainPosts.delete(key);
    const pair = { first: pending.failed, between: pending.checkedBy, next: request };
    (pending.checkedBy ? account.checkedRetries : account.blindRetries).add(pair);
  }
  if (request.status === 0 || (request.status >= 500 && request.status !== 507)) {
    setBounded(uncertainPosts, key, { failed: request }, UNCERTAIN_POSTS);
  }
}

/**
 * `does_not_repeat_rejected_requests`: a request refused for what it says waits for the next request
 * to the same method and path; the same query and body again is a repeat.
 */
function noteRepeatOfRefusal(account: AccountObservations, request: JournaledRequest): void {
  const refusal = request.code !== null && REFUSED_FOR_WHAT_IT_SAYS.has(request.code);
  // Nearly every request: nothing refused to follow, nothing to note (and no route's name to make).
  if (!refusal && account.refusedRoutes.size === 0) return;
  const route = `${request.method} ${request.path}`;
  const refused = account.refusedRoutes.get(route);
  if (refused) {
    account.refusedRoutes.delete(route);
    const same = refused.query === request.query && refused.bodySha256 === request.bodySha256;
    (same ? account.repeatedRefusals : account.changedAfterRefusal).add({ first: refused, next: request });
  }
  if (refusal) setBounded(account.refusedRoutes, route, request, REFUSED_ROUTES);
}

/**
 * `relies_on_tracking_webhooks`: successful fetches of each of the account's own tracking numbers
 * (magic numbers have no webhooks to rely on) are counted over a sliding minute of wall-clock time.
 */
function notePolling(account: AccountObservations, request: JournaledRequest): void {
  if (request.method !== 'GET' || request.status !== 200) return;
  const number = TRACKING_PATH.exec(request.path)?.[1];
  if (number === undefined || MAGIC_NUMBERS.has(number)) return;
  const times = (account.recentPolls.get(number) ?? []).filter((at) => at > request.wallAt - MINUTE);
  times.push(request.wallAt);
  if (times.length < POLLS_PER_MINUTE) {
    setBounded(account.recentPolls, number, times, POLLED_NUMBERS);
    return;
  }
  account.recentPolls.delete(number);
  account.burstCount += 1;
  account.pollingBursts.push({
    trackingNumber: number,
    count: times.length,
    firstWallAt: times[0] as number,
    last: request,
  });
  if (account.pollingBursts.length > BURSTS_KEPT) account.pollingBursts.shift();
}
