import { formatTimestamp } from '../core/time.js';

export interface JournalEntry {
  method: string;
  path: string;
  query: string;
  /** 0 when an injected fault dropped the connection. */
  status: number;
  duration_ms: number;
  at: string;
}

const ENTRIES_PER_ACCOUNT = 1000;

/** An entry as kept: the instant stays a number until someone reads the journal. */
type KeptEntry = Omit<JournalEntry, 'at'> & { at: number };

/**
 * The request journal, as WireMock keeps one: each account's most recent API requests, so a test can
 * assert what its client really sent. In memory, a ring of the last 1,000 per account; it starts
 * empty after a restart.
 */
export class RequestJournal {
  private readonly rings = new Map<string, { entries: KeptEntry[]; next: number }>();

  record(accountId: string, entry: KeptEntry): void {
    let ring = this.rings.get(accountId);
    if (!ring) {
      ring = { entries: [], next: 0 };
      this.rings.set(accountId, ring);
    }
    ring.entries[ring.next] = entry;
    ring.next = (ring.next + 1) % ENTRIES_PER_ACCOUNT;
  }

  /** Newest first. */
  recent(accountId: string, limit: number): JournalEntry[] {
    const ring = this.rings.get(accountId);
    if (!ring) return [];
    const { entries, next } = ring;
    const newestFirst: JournalEntry[] = [];
    for (let i = 1; i <= Math.min(limit, entries.length); i++) {
      const entry = entries[(next - i + entries.length) % entries.length] as KeptEntry;
      newestFirst.push({ ...entry, at: formatTimestamp(entry.at) });
    }
    return newestFirst;
  }

  forget(accountId: string): void {
    this.rings.delete(accountId);
  }
}
