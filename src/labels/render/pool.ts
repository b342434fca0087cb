import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Pool } from 'workerpool';
import type { LabelDocument } from './document.js';
import { LABEL_CONTENT_TYPES, type RenderedLabel, renderLabel } from './index.js';

export interface LabelRenderer {
  render(doc: LabelDocument): Promise<RenderedLabel>;
  /** Stops the render threads (a render under way is abandoned). */
  close(): Promise<void>;
}

/** Render threads are stopped after this long without a render: each holds 75 to 90 MiB. */
export const RENDER_THREADS_IDLE_MS = 30_000;

/**
 * Renders label files on up to `threads` worker threads (`--render-threads`), started on the first
 * render and stopped when idle. A render is 4 to 5 ms of CPU: on the event loop, ten first downloads
 * at once held every other request of every account for 50 ms, and used one core of several. The
 * threads run the built worker beside the bundle (`dist/render-worker.cjs`); run from the TypeScript
 * sources (tests, `npm run dev`) there is none, and, as with `threads` 0, files render on the main
 * thread, to the same bytes.
 */
export function createLabelRenderer(threads: number): LabelRenderer {
  const script = fileURLToPath(new URL('./render-worker.cjs', import.meta.url));
  if (threads === 0 || !existsSync(script)) return { render: renderLabel, close: async () => {} };

  let pool: Pool | undefined;
  let rendering = 0;
  let idle: NodeJS.Timeout | undefined;
  const retire = () => {
    const retired = pool;
    pool = undefined;
    void retired?.terminate();
  };
  return {
    async render(doc) {
      clearTimeout(idle);
      // Loaded on the first render, by `require` (the bundle has no dynamic `import()`), like the
      // renderers themselves: a sandbox that never renders a label does not pay for it at start.
      pool ??= (createRequire(import.meta.url)('workerpool') as typeof import('workerpool')).pool(script, {
        workerType: 'thread',
        maxWorkers: threads,
      });
      rendering++;
      try {
        const bytes = (await pool.exec('render', [doc])) as Uint8Array;
        return { bytes, contentType: LABEL_CONTENT_TYPES[doc.format], extension: doc.format };
      } finally {
        rendering--;
        if (rendering === 0) idle = setTimeout(retire, RENDER_THREADS_IDLE_MS).unref();
      }
    },
    async close() {
      clearTimeout(idle);
      const closing = pool;
      pool = undefined;
      await closing?.terminate(true);
    },
  };
}
