import { workerData } from 'node:worker_threads';
import { worker } from 'workerpool';
import type { LabelDocument } from './document.js';
import { renderLabel } from './index.js';
import type { RenderThreadOptions } from './pool.js';
import { lowerThreadPriority } from './priority.js';

/**
 * A render thread (built to `dist/render-worker.cjs`, see pool.ts): one method, `render`, answering a
 * label document with its file's bytes.
 */
if ((workerData as RenderThreadOptions | undefined)?.lowPriority) lowerThreadPriority();

worker({
  render: async (doc: LabelDocument): Promise<Uint8Array> => (await renderLabel(doc)).bytes,
});
