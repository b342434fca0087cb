import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Pool } from 'workerpool';
import type { LabelDocument } from './label-document.js';
import { LABEL_CONTENT_TYPES, type RenderedLabel, renderLabel } from './render.js';

export interface LabelRenderer {
  render(doc: LabelDocument): Promise<RenderedLabel>;
  /** Stops the render threads (a render under way is abandoned). */
  close(): Promise<void>;
}

/**
 * Renders label files on worker threads, one a core at most, started on the first render. A render is
 * 4 to 5 ms of CPU: on the event loop, ten first downloads at once held every other request of every
 * account for 50 ms, and used one core of several. The threads run the built worker beside the
 * bundle (`dist/render-worker.cjs`); run from the TypeScript sources (tests, `npm run dev`) there is
 * none, and files are rendered in-process, to the same bytes.
 */
export function createLabelRenderer(): LabelRenderer {
  const script = fileURLToPath(new URL('./render-worker.cjs', import.meta.url));
  if (!existsSync(script)) return { render: renderLabel, close: async () => {} };

  let threads: Pool | undefined;
  return {
    async render(doc) {
      // Loaded on the first render, by `require` (the bundle has no dynamic `import()`), like the
      // renderers themselves: a sandbox that never renders a label does not pay for it at start.
      threads ??= (createRequire(import.meta.url)('workerpool') as typeof import('workerpool')).pool(script, {
        workerType: 'thread',
        maxWorkers: availableParallelism(),
      });
      const bytes = (await threads.exec('render', [doc])) as Uint8Array;
      return { bytes, contentType: LABEL_CONTENT_TYPES[doc.format], extension: doc.format };
    },
    async close() {
      await threads?.terminate(true);
    },
  };
}
