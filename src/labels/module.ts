import type { Context } from 'hono';
import type { SandboxModule } from '../module.js';
import type { LabelFiles } from './files.js';
import { cdnRoutes, labelRoutes } from './routes.js';
import { labelControlRoutes } from './sandbox-routes.js';
import type { LabelService } from './service.js';
import type { LabelStore } from './store.js';

/**
 * Labels: their routes under /v1, their PNG previews under /_sandbox, the CDN of pre-signed URLs, the rendered files' cache and the render
 * threads. `cdnUrl` is `--cdn-url`; without it the CDN is this server's own `/cdn`.
 */
export function labelsModule(deps: {
  labels: LabelService;
  store: LabelStore;
  files: LabelFiles;
  cdnUrl: string | undefined;
}): SandboxModule {
  const cdnBase = (c: Context) => deps.cdnUrl ?? `${new URL(c.req.url).origin}/cdn`;
  return {
    name: 'labels',
    tables: ['labels'],
    api: labelRoutes(deps.labels, cdnBase),
    controls: labelControlRoutes(deps.labels, cdnBase),
    mounts: { '/cdn': cdnRoutes(deps.labels) },
    reset: (accountId) => deps.store.deleteAccount(accountId),
    close: () => deps.files.close(),
  };
}
