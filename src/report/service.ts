import type { Actor } from '../core/actor.js';
import { formatTimestamp } from '../core/time.js';
import type { AttemptRecord } from '../webhooks/attempt-store.js';
import { CHECKS, overallStatus } from './checks.js';
import type { Observations } from './observations.js';
import type { Report } from './schema.js';

/**
 * How many of the account's latest delivery attempts a report reads: enough for any CI run, and a
 * bound on what one report costs however long an account has been sending.
 */
export const ATTEMPTS_JUDGED = 10_000;

export interface ReportDeps {
  observations: Observations;
  /** The account's most recent delivery attempts, newest first (the webhooks module). */
  recentAttempts: (accountId: string, limit: number) => Promise<readonly AttemptRecord[]>;
  webhookTimeoutMs: number;
  realNow: () => number;
}

/**
 * The integration report: how the account's client behaves, judged from what the sandbox keeps
 * anyway (the request journal's observations, the delivery log, the label CDN's fetches).
 */
export class ReportService {
  constructor(private readonly deps: ReportDeps) {}

  async report(actor: Actor): Promise<Report> {
    const facts = {
      observations: await this.deps.observations.of(actor.accountId),
      attempts: await this.deps.recentAttempts(actor.accountId, ATTEMPTS_JUDGED),
      webhookTimeoutMs: this.deps.webhookTimeoutMs,
    };
    const checks = CHECKS.map((check) => ({ id: check.id, title: check.title, ...check.judge(facts) }));
    return {
      account_id: actor.accountId,
      generated_at: formatTimestamp(actor.now),
      generated_wall_at: formatTimestamp(this.deps.realNow()),
      status: overallStatus(checks),
      checks,
    };
  }
}
