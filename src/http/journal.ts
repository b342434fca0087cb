import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './context.js';
import { formatTimestamp } from './time.js';

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

/**
 * The request journal, as WireMock keeps one: each account's most recent API requests, so a test can
 * assert what its client really sent. In memory, a bounded ring per account; it starts empty after a
 * restart.
 */
export class RequestJournal {
  private readonly entries = new Map<string, JournalEntry[]>();

  record(accountId: string, entry: JournalEntry): void {
    let list = this.entries.get(accountId);
    if (!list) {
      list = [];
      this.entries.set(accountId, list);
    }
    list.push(entry);
    if (list.length > ENTRIES_PER_ACCOUNT) list.splice(0, list.length - ENTRIES_PER_ACCOUNT);
  }

  /** Newest first. */
  recent(accountId: string, limit: number): JournalEntry[] {
    return (this.entries.get(accountId) ?? []).slice(-limit).reverse();
  }

  forget(accountId: string): void {
    this.entries.delete(accountId);
  }
}

/** Journals every authenticated API request of an account, whatever its outcome. */
export function journalRequests(journal: RequestJournal): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    const { account, now } = c.get('auth');
    try {
      await next();
    } finally {
      const url = c.req.url;
      const queryStart = url.indexOf('?');
      journal.record(account.id, {
        method: c.req.method,
        path: c.req.path,
        query: queryStart === -1 ? '' : url.slice(queryStart + 1),
        status: c.get('dropped') ? 0 : c.res.status,
        duration_ms: Math.round((performance.now() - started) * 100) / 100,
        at: formatTimestamp(now),
      });
    }
  };
}
