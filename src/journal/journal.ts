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
 * The journal of one sandbox, in memory: a ring of the last 1,000 requests per account; it starts
 * empty after a restart. Listeners hear of each request as it is recorded.
 */
export class MemoryJournal implements RequestJournal {
  private readonly rings = new Map<string, { entries: JournaledRequest[]; next: number }>();
  private readonly listeners = new Set<RequestListener>();

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
      ring = { entries: [], next: 0 };
      this.rings.set(accountId, ring);
    }
    ring.entries[ring.next] = entry;
    ring.next = (ring.next + 1) % ENTRIES_PER_ACCOUNT;
    for (const listener of this.listeners) listener(accountId, entry);
  }

  /** Newest first. */
  async recent(accountId: string, limit: number): Promise<JournalEntry[]> {
    const ring = this.rings.get(accountId);
    if (!ring) return [];
    const { entries, next } = ring;
    const newestFirst: JournalEntry[] = [];
    for (let i = 1; i <= Math.min(limit, entries.length); i++) {
      const entry = entries[(next - i + entries.length) % entries.length] as JournaledRequest;
      newestFirst.push(presentRequest(entry));
    }
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
