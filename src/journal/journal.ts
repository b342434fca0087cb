import { drawIdHalf, idFromDraws } from '../core/ids.js';
import { formatTimestamp } from '../core/time.js';
import type { Sql } from '../db/sql.js';

/**
 * One API request as the journal keeps it. Instants stay numbers until someone reads the journal:
 * `at` on the account's clock, `wallAt` and `answeredWallAt` on the wall clock (the report judges
 * waits, such as a `Retry-After`, in real seconds).
 */
export interface JournaledRequest {
  /** `req_…`: what the report's evidence names. */
  id: string;
  method: string;
  path: string;
  query: string;
  /** 0 when an injected fault dropped the connection. */
  status: number;
  /** The contract's error code when the answer was an error. */
  code: string | null;
  /** The error's `field`, when one field was to blame. */
  field: string | null;
  durationMs: number;
  /** When it arrived, on the account's clock. */
  at: number;
  /** When it arrived, by the wall clock. */
  wallAt: number;
  /** When it was answered, by the wall clock. */
  answeredWallAt: number;
  keyId: string;
  /** The key had been revoked: the request was refused with 401 before anything else. */
  keyRevoked: boolean;
  /** Seconds, when the answer carried `Retry-After`. */
  retryAfter: number | null;
  /** SHA-256 of the body (hex), for methods that carry one: tells a resend from a changed request. */
  bodySha256: string | null;
}

/** What `GET /_sandbox/requests` shows of an entry. */
export interface JournalEntry {
  id: string;
  method: string;
  path: string;
  query: string;
  status: number;
  code: string | null;
  field: string | null;
  duration_ms: number;
  at: string;
  wall_at: string;
  key_id: string;
  key_revoked: boolean;
  retry_after: number | null;
  body_sha256: string | null;
}

/**
 * Hears of every request this process journals, as it does: on one sandbox, the integration report's
 * bounded observations.
 */
export type RequestListener = (accountId: string, request: JournaledRequest) => void;

/**
 * The request journal, as WireMock keeps one: each account's most recent API requests, so a test can
 * assert what its client really sent. One sandbox keeps it in memory (MemoryJournal); replicas over
 * PostgreSQL share it in a table (postgres-journal.ts), so that every replica lists and streams every
 * replica's requests.
 */
export interface RequestJournal {
  /** Keeps the request (over PostgreSQL, written within a flush interval, in a batch). */
  record(accountId: string, request: JournaledRequest): void;
  /** The account's latest requests, newest first: those of this process at once, every replica's. */
  recent(accountId: string, limit: number): Promise<JournalEntry[]>;
  /** Tells `listener` of each request this process records, as it does, until the function it answers is called. */
  observe(listener: RequestListener): () => void;
  /**
   * Follows the account's requests, every replica's, from now on (`GET /_sandbox/requests/stream`):
   * resolves once it does, with the function that stops it.
   */
  watch(accountId: string, listener: (request: JournaledRequest) => void): Promise<() => void>;
  /** Deletes the account's entries (a reset), through the reset's transaction. */
  deleteAccount(tx: Sql, accountId: string): Promise<void>;
  /** Writes what is still to be written; the database is closed after this. */
  close(): Promise<void>;
}

/** How many of each account's requests the journal keeps. */
export const ENTRIES_PER_ACCOUNT = 1000;

export function presentRequest(request: JournaledRequest): JournalEntry {
  return {
    id: request.id,
    method: request.method,
    path: request.path,
    query: request.query,
    status: request.status,
    code: request.code,
    field: request.field,
    duration_ms: request.durationMs,
    at: formatTimestamp(request.at),
    wall_at: formatTimestamp(request.wallAt),
    key_id: request.keyId,
    key_revoked: request.keyRevoked,
    retry_after: request.retryAfter,
    body_sha256: request.bodySha256,
  };
}

/**
 * A journaled request as the middleware notes it: named (`id`, a ULID) when first read (the journal's
 * pages, the report's evidence, a replica's flush), since most requests are never read and spelling a
 * ULID out is the costliest thing about noting one. Its random part is drawn at once, so that the
 * journal's ring, which keeps the draws rather than this object, names the request as this does,
 * whichever is read first and however long after. A class rather than an object literal with a
 * getter, which V8 builds through its runtime (about 0.6 µs, a request). Once read, `id` is an own
 * property like the others; `toJSON` names it first for an entry written out unread, as the
 * literal's getter did.
 */
export class NotedRequest implements JournaledRequest {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly status: number;
  readonly code: string | null;
  readonly field: string | null;
  readonly durationMs: number;
  readonly at: number;
  readonly wallAt: number;
  readonly answeredWallAt: number;
  readonly keyId: string;
  readonly keyRevoked: boolean;
  readonly retryAfter: number | null;
  readonly bodySha256: string | null;
  readonly #idDraws: readonly [number, number] = [drawIdHalf(), drawIdHalf()];

  constructor(request: Omit<JournaledRequest, 'id'>) {
    this.method = request.method;
    this.path = request.path;
    this.query = request.query;
    this.status = request.status;
    this.code = request.code;
    this.field = request.field;
    this.durationMs = request.durationMs;
    this.at = request.at;
    this.wallAt = request.wallAt;
    this.answeredWallAt = request.answeredWallAt;
    this.keyId = request.keyId;
    this.keyRevoked = request.keyRevoked;
    this.retryAfter = request.retryAfter;
    this.bodySha256 = request.bodySha256;
  }

  get id(): string {
    const id = idFromDraws('req', this.at, this.#idDraws[0], this.#idDraws[1]);
    Object.defineProperty(this, 'id', { value: id, enumerable: true });
    return id;
  }

  /** The draws its `id` is made from. */
  static idDrawsOf(request: NotedRequest): readonly [number, number] {
    return request.#idDraws;
  }

  toJSON(): JournaledRequest {
    return Object.assign({ id: this.id }, this);
  }
}

/** A SHA-256 as `bodySha256` holds it: kept as its 32 bytes. */
const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * One account's last requests, field by field: numbers in typed arrays, text in arrays of strings
 * that requests share. An entry kept as an object of its own, with its numbers and its hash's hex,
 * outlived every young-generation collection and died in the old generation, where only a full
 * collection takes garbage back, and V8 put the first of those off until the old generation had grown
 * severalfold since the start; here a request leaves nothing behind but what the arrays hold.
 */
class Ring {
  /** How many requests were ever recorded: the next one's slot is this modulo ENTRIES_PER_ACCOUNT. */
  private recorded = 0;
  /** An entry's id as given, for entries that are not `NotedRequest`s. */
  private readonly givenIds: (string | undefined)[] = [];
  private readonly methods: string[] = [];
  private readonly paths: string[] = [];
  private readonly queries: string[] = [];
  private readonly statuses: number[] = [];
  private readonly codes: (string | null)[] = [];
  private readonly fields: (string | null)[] = [];
  private readonly keyIds: string[] = [];
  private readonly keyRevoked: boolean[] = [];
  private readonly retryAfters: (number | null)[] = [];
  /** A hash that is not hex (none the middleware makes), as it was given. */
  private readonly otherHashes: (string | null | undefined)[] = [];
  // Grown by doubling up to ENTRIES_PER_ACCOUNT, so that an account with a few requests keeps little.
  private capacity = 16;
  private firstIdDraws = new Float64Array(this.capacity);
  private secondIdDraws = new Float64Array(this.capacity);
  private durations = new Float64Array(this.capacity);
  private ats = new Float64Array(this.capacity);
  private wallAts = new Float64Array(this.capacity);
  private answeredWallAts = new Float64Array(this.capacity);
  private hashes = Buffer.alloc(this.capacity * 32);

  constructor(private readonly intern: (text: string) => string) {}

  get size(): number {
    return Math.min(this.recorded, ENTRIES_PER_ACCOUNT);
  }

  add(entry: JournaledRequest): void {
    const slot = this.recorded % ENTRIES_PER_ACCOUNT;
    if (slot === this.capacity) this.grow();
    this.recorded += 1;
    if (entry instanceof NotedRequest) {
      const [first, second] = NotedRequest.idDrawsOf(entry);
      this.firstIdDraws[slot] = first;
      this.secondIdDraws[slot] = second;
      this.givenIds[slot] = undefined;
    } else {
      this.givenIds[slot] = entry.id;
    }
    this.methods[slot] = entry.method;
    this.paths[slot] = this.intern(entry.path);
    this.queries[slot] = this.intern(entry.query);
    this.statuses[slot] = entry.status;
    this.codes[slot] = entry.code;
    this.fields[slot] = entry.field;
    this.keyIds[slot] = entry.keyId;
    this.keyRevoked[slot] = entry.keyRevoked;
    this.retryAfters[slot] = entry.retryAfter;
    this.durations[slot] = entry.durationMs;
    this.ats[slot] = entry.at;
    this.wallAts[slot] = entry.wallAt;
    this.answeredWallAts[slot] = entry.answeredWallAt;
    const hash = entry.bodySha256;
    if (hash !== null && SHA256_HEX.test(hash)) {
      this.hashes.write(hash, slot * 32, 32, 'hex');
      this.otherHashes[slot] = undefined;
    } else {
      this.otherHashes[slot] = hash;
    }
  }

  /** The entry `back` requests before the latest (0 is the latest), as `presentRequest` shows it. */
  present(back: number): JournalEntry {
    const slot = (this.recorded - 1 - back) % ENTRIES_PER_ACCOUNT;
    const at = this.ats[slot] as number;
    const otherHash = this.otherHashes[slot];
    return {
      id:
        this.givenIds[slot] ??
        idFromDraws('req', at, this.firstIdDraws[slot] as number, this.secondIdDraws[slot] as number),
      method: this.methods[slot] as string,
      path: this.paths[slot] as string,
      query: this.queries[slot] as string,
      status: this.statuses[slot] as number,
      code: this.codes[slot] as string | null,
      field: this.fields[slot] as string | null,
      duration_ms: this.durations[slot] as number,
      at: formatTimestamp(at),
      wall_at: formatTimestamp(this.wallAts[slot] as number),
      key_id: this.keyIds[slot] as string,
      key_revoked: this.keyRevoked[slot] as boolean,
      retry_after: this.retryAfters[slot] as number | null,
      body_sha256:
        otherHash === undefined ? this.hashes.toString('hex', slot * 32, slot * 32 + 32) : otherHash,
    };
  }

  private grow(): void {
    const capacity = Math.min(this.capacity * 2, ENTRIES_PER_ACCOUNT);
    const widen = (numbers: Float64Array) => {
      const wider = new Float64Array(capacity);
      wider.set(numbers);
      return wider;
    };
    this.firstIdDraws = widen(this.firstIdDraws);
    this.secondIdDraws = widen(this.secondIdDraws);
    this.durations = widen(this.durations);
    this.ats = widen(this.ats);
    this.wallAts = widen(this.wallAts);
    this.answeredWallAts = widen(this.answeredWallAts);
    const hashes = Buffer.alloc(capacity * 32);
    this.hashes.copy(hashes);
    this.hashes = hashes;
    this.capacity = capacity;
  }
}

/** Paths and queries kept once each, whichever request brought them, up to this many (then forgotten at once). */
const TEXTS_KEPT = 1000;

/**
 * The journal of one sandbox, in memory: a ring of the last 1,000 requests per account; it starts
 * empty after a restart. Listeners hear of each request as it is recorded.
 */
export class MemoryJournal implements RequestJournal {
  private readonly rings = new Map<string, Ring>();
  private readonly listeners = new Set<RequestListener>();
  private readonly texts = new Map<string, string>();
  private readonly intern = (text: string): string => {
    const kept = this.texts.get(text);
    if (kept !== undefined) return kept;
    if (this.texts.size >= TEXTS_KEPT) this.texts.clear();
    this.texts.set(text, text);
    return text;
  };

  /** Tells `listener` of each request from now on, until the function it answers is called. */
  observe(listener: RequestListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** How many listeners hear of requests (a stream that ended must not leave its listener behind). */
  get listenerCount(): number {
    return this.listeners.size;
  }

  record(accountId: string, entry: JournaledRequest): void {
    let ring = this.rings.get(accountId);
    if (!ring) {
      ring = new Ring(this.intern);
      this.rings.set(accountId, ring);
    }
    ring.add(entry);
    for (const listener of this.listeners) listener(accountId, entry);
  }

  /** Newest first. */
  async recent(accountId: string, limit: number): Promise<JournalEntry[]> {
    const ring = this.rings.get(accountId);
    if (!ring) return [];
    const newestFirst: JournalEntry[] = [];
    for (let back = 0; back < Math.min(limit, ring.size); back++) newestFirst.push(ring.present(back));
    return newestFirst;
  }

  async watch(accountId: string, listener: (request: JournaledRequest) => void): Promise<() => void> {
    return this.observe((account, request) => {
      if (account === accountId) listener(request);
    });
  }

  forget(accountId: string): void {
    this.rings.delete(accountId);
  }

  async deleteAccount(_tx: Sql, accountId: string): Promise<void> {
    this.forget(accountId);
  }

  async close(): Promise<void> {}
}
