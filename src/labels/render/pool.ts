import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { ResourceLimits } from 'node:worker_threads';
import type { Pool } from 'workerpool';
import type { LabelDocument } from './document.js';
import { LABEL_CONTENT_TYPES, type RenderedLabel, renderLabel } from './index.js';

export interface LabelRenderer {
  /** Renders a file now: a download is waiting for it. */
  render(doc: LabelDocument): Promise<RenderedLabel>;
  /**
   * Renders a file ahead of its download, on a thread of its own at the lowest CPU priority, so that
   * it only takes time that requests and downloads leave. Absent when files render on the main
   * thread, where a render ahead of time would hold requests up.
   */
  readonly background?: (doc: LabelDocument) => Promise<RenderedLabel>;
  /** Stops the render threads (a render under way is abandoned). */
  close(): Promise<void>;
}

/** Render threads are stopped after this long without a render: each holds 75 to 90 MiB. */
export const RENDER_THREADS_IDLE_MS = 30_000;

/**
 * The thread that renders ahead lives as long as purchases come, so it keeps its heap small: a render
 * thread's heap grows to 130 MiB over a few hundred renders unless bounded; bounded so, it holds 70 to
 * 95 MiB, for about 5 % more CPU a render spent collecting garbage (a render needs under 30 MiB).
 */
const AHEAD_THREAD_LIMITS = { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 48 };

/** What the render threads' script reads from `workerData`. */
export interface RenderThreadOptions {
  /** Lower the thread's CPU priority to the lowest before the first render (see priority.ts). */
  lowPriority: boolean;
}

/**
 * Renders label files on up to `threads` worker threads (`--render-threads`), started on the first
 * render and stopped when idle. A render is 2 to 3 ms of CPU (4 to 5 ms before PDFs were written
 * directly), most of it bwip-js encoding the 2D symbol: on the event loop, ten first downloads at once
 * held every other request of every account for 50 ms, and used one core of several. The
 * threads run the built worker beside the bundle (`dist/render-worker.cjs`); run from the TypeScript
 * sources (tests, `npm run dev`) there is none, and, as with `threads` 0, files render on the main
 * thread, to the same bytes, and nothing renders in the background.
 *
 * Files rendered ahead of their download get one more thread, at the lowest priority: sharing the
 * download threads would let a burst of purchases delay the downloads, and at normal priority it
 * would take a core from the requests.
 */
export function createLabelRenderer(threads: number): LabelRenderer {
  const script = fileURLToPath(new URL('./render-worker.cjs', import.meta.url));
  if (threads === 0 || !existsSync(script)) return { render: renderLabel, close: async () => {} };
  const downloads = renderThreads(script, threads, { lowPriority: false });
  const ahead = renderThreads(script, 1, { lowPriority: true }, AHEAD_THREAD_LIMITS);
  return {
    render: downloads.render,
    background: ahead.render,
    async close() {
      await Promise.all([downloads.close(), ahead.close()]);
    },
  };
}

/** A pool of render threads, started on its first render and stopped when idle. */
function renderThreads(
  script: string,
  threads: number,
  options: RenderThreadOptions,
  resourceLimits?: ResourceLimits,
): LabelRenderer {
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
        workerThreadOpts: { workerData: options, ...(resourceLimits ? { resourceLimits } : {}) },
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
