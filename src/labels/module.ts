import type { Context } from 'hono';
import { SettingsStore } from '../db/settings.js';
import type { SandboxModule } from '../module.js';
import { LabelFiles } from './files.js';
import { LABELS_MIGRATIONS } from './migrations.js';
import { createLabelRenderer } from './render/pool.js';
import { cdnRoutes, labelRoutes } from './routes.js';
import { labelControlRoutes } from './sandbox-routes.js';
import { LabelService } from './service.js';
import { UrlSigner } from './signed-url.js';
import { LabelStore } from './store.js';

declare module '../module.js' {
  interface Ports {
    labels: { service: LabelService; store: LabelStore; files: LabelFiles };
  }
}

/**
 * Labels: their routes under /v1, their PNG previews under /_sandbox, the CDN of pre-signed URLs,
 * the rendered files' cache and the render threads. `cdnUrl` is `--cdn-url`; without it the CDN is
 * this server's own `/cdn`.
 */
export function labelsModule(settings: { cdnUrl: string | undefined; renderThreads: number }): SandboxModule {
  return {
    name: 'labels',
    migrations: LABELS_MIGRATIONS,
    async build({ db, ports, provide }) {
      const store = new LabelStore();
      const files = new LabelFiles(createLabelRenderer(settings.renderThreads));
      const service = new LabelService({
        db,
        store,
        shipments: ports.shipments.service,
        shipmentStore: ports.shipments.store,
        events: ports.events.store,
        signer: new UrlSigner(await new SettingsStore(db).secret('url_signing_secret')),
        files,
        tracking: {
          start: (tx, actor, label, shipment) =>
            ports.tracking.service.startDefault(tx, actor, label, shipment),
          stop: (tx, actor, labelId) => ports.tracking.service.stop(tx, actor, labelId),
        },
        nowOf: (accountId) => ports.clock.nowOf(accountId),
        noteUrlFetch: (fetch) => ports.report.observations.noteLabelUrl(fetch),
      });
      provide('labels', { service, store, files });
      const cdnBase = (c: Context) => settings.cdnUrl ?? `${new URL(c.req.url).origin}/cdn`;
      return {
        api: labelRoutes(service, cdnBase),
        controls: labelControlRoutes(service, cdnBase),
        mounts: { '/cdn': cdnRoutes(service) },
        reset: (tx, accountId) => store.deleteAccount(tx, accountId),
        close: () => files.close(),
      };
    },
  };
}
