import { startClock } from '../clock/clock.js';
import { transaction } from '../db/database.js';
import type { State } from '../state.js';

/** Everything an account owns but its keys and settings, children before parents. */
const ACCOUNT_TABLES = [
  'webhook_attempts',
  'jobs',
  'tracking_events',
  'labels',
  'shipments',
  'events',
  'webhooks',
  'emails',
  'faults',
] as const;

/**
 * `POST /_sandbox/reset`: the account as if new (no shipments, labels, events, webhooks, deliveries,
 * faults or e-mails, its clock back at real time) but with its keys, plan and settings. Other
 * accounts are untouched.
 */
export function resetAccount(state: State, accountId: string): void {
  const realNow = state.realNow();
  transaction(state.db, () => {
    for (const table of ACCOUNT_TABLES)
      state.db.prepare(`DELETE FROM ${table} WHERE account_id = ?`).run(accountId);
    state.accounts.saveClock(accountId, startClock(realNow, state.config.clockSpeed));
  });
  state.faults.deleteAll(accountId);
  state.journal.forget(accountId);
  state.rateLimiter.forgetAccount(
    accountId,
    state.accounts.keys(accountId).map((key) => key.id),
  );
}
