import { worker } from 'workerpool';
import type { LabelDocument } from './document.js';
import { renderLabel } from './index.js';

/**
 * A render thread (built to `dist/render-worker.cjs`, see render-pool.ts): one method, `render`,
 * answering a label document with its file's bytes.
 */
worker({
  render: async (doc: LabelDocument): Promise<Uint8Array> => (await renderLabel(doc)).bytes,
});
