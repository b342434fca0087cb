import type { SandboxModule } from '../module.js';
import { REPORT_MIGRATIONS } from './migrations.js';
import { ClientObservations, type Observations } from './observations.js';
import { PostgresObservations } from './postgres-observations.js';
import { reportRoutes } from './sandbox-routes.js';
import { ReportService } from './service.js';

declare module '../module.js' {
  interface Ports {
    report: { observations: Observations };
  }
}

/**
 * The integration report: `GET /_sandbox/report`. It reads the delivery log, and keeps, bounded per
 * account, what the request journal and the label CDN tell it: in memory on one sandbox, and over
 * PostgreSQL in tables that every replica feeds (postgres-observations.ts).
 */
export function reportModule(settings: { webhookTimeoutMs: number }): SandboxModule {
  return {
    name: 'report',
    migrations: REPORT_MIGRATIONS,
    build({ db, logger, realNow, ports, provide }) {
      const { journal, notes } = ports.journal;
      let observations: Observations;
      let close: (() => Promise<void>) | undefined;
      if (notes) {
        const shared = new PostgresObservations(db, notes, logger, realNow);
        observations = shared;
        close = () => shared.close();
      } else {
        const own = new ClientObservations(realNow);
        journal.observe((accountId, request) => own.noteRequest(accountId, request));
        observations = own;
      }
      const reports = new ReportService({
        observations,
        recentAttempts: (accountId, limit) => ports.webhooks.attempts.recentAttempts(db, accountId, limit),
        webhookTimeoutMs: settings.webhookTimeoutMs,
        realNow,
      });
      provide('report', { observations });
      return {
        controls: reportRoutes(reports),
        reset: (tx, accountId) => observations.deleteAccount(tx, accountId),
        ...(close && { close }),
      };
    },
  };
}
