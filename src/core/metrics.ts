import type { ClockState } from './clock.js';

/**
 * What the sandbox's background work tells its metrics (`GET /metrics`, src/metrics/): the scheduler
 * and the webhook sender call these, one line each, and know nothing of how they are counted. Nothing
 * passed here names a tenant: no account, key, URL or id.
 */
export interface WorkMetrics {
  /**
   * The background timer started an account's due work `overdueMs` after its due instant on the
   * account's clock (`clock` says how fast that clock runs).
   */
  schedulerLag(clock: Pick<ClockState, 'speed' | 'frozen'>, overdueMs: number): void;
  /** A webhook attempt went out and has its outcome: 2xx (`ok`), or the kind of failure. */
  webhookAttempt(outcome: { ok: boolean; error: string | null }): void;
}

/** Counts nothing: for the pieces that tests build alone. */
export const NO_METRICS: WorkMetrics = {
  schedulerLag: () => undefined,
  webhookAttempt: () => undefined,
};
