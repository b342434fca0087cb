import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../http/context.js';
import type { RequestJournal } from './journal.js';

/** Journals every authenticated API request of an account, whatever its outcome. */
export function journalRequests(journal: RequestJournal): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    const { accountId, now } = c.get('caller');
    try {
      await next();
    } finally {
      const url = c.req.url;
      const queryStart = url.indexOf('?');
      journal.record(accountId, {
        method: c.req.method,
        path: c.req.path,
        query: queryStart === -1 ? '' : url.slice(queryStart + 1),
        status: c.get('dropped') ? 0 : c.res.status,
        duration_ms: Math.round((performance.now() - started) * 100) / 100,
        at: now,
      });
    }
  };
}
