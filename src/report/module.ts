import type { SandboxModule } from '../module.js';
import { ClientObservations } from './observations.js';
import { reportRoutes } from './sandbox-routes.js';
import { ReportService } from './service.js';

declare module '../module.js' {
  interface Ports {
    report: { observations: ClientObservations };
  }
}

/**
 * The integration report: `GET /_sandbox/report`. No tables of its own: it reads the delivery log and
 * keeps, in memory and bounded per account, what the request journal and the label CDN tell it.
 */
export function reportModule(settings: { webhookTimeoutMs: number }): SandboxModule {
  return {
    name: 'report',
    build({ db, realNow, ports, provide }) {
      const observations = new ClientObservations(realNow);
      ports.journal.journal.observe((accountId, request) => observations.noteRequest(accountId, request));
      const reports = new ReportService({
        observations,
        recentAttempts: (accountId, limit) => ports.webhooks.store.recentAttempts(db, accountId, limit),
        webhookTimeoutMs: settings.webhookTimeoutMs,
        realNow,
      });
      provide('report', { observations });
      return { controls: reportRoutes(reports), reset: (_tx, accountId) => observations.forget(accountId) };
    },
  };
}
