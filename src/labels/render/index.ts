import type { LabelDocument, LabelFormat } from './document.js';

export type LabelContentType = 'application/pdf' | 'image/png' | 'application/zpl';

export interface RenderedLabel {
  bytes: Uint8Array;
  contentType: LabelContentType;
  extension: LabelFormat;
}

export const LABEL_CONTENT_TYPES: Readonly<Record<LabelFormat, LabelContentType>> = {
  pdf: 'application/pdf',
  png: 'image/png',
  zpl: 'application/zpl',
};

/**
 * The label's file. Each renderer is imported on first use: pdf-lib, bwip-js and resvg take a while
 * to load, and a server that never renders a label should not pay for them at start.
 */
export async function renderLabel(doc: LabelDocument): Promise<RenderedLabel> {
  const file = (bytes: Uint8Array): RenderedLabel => ({
    bytes,
    contentType: LABEL_CONTENT_TYPES[doc.format],
    extension: doc.format,
  });
  switch (doc.format) {
    case 'pdf': {
      const { renderPdf } = await import('./pdf.js');
      return file(await renderPdf(doc));
    }
    case 'png': {
      const { renderPng } = await import('./png.js');
      return file(await renderPng(doc));
    }
    case 'zpl': {
      const { renderZpl } = await import('./zpl.js');
      return file(new TextEncoder().encode(renderZpl(doc)));
    }
  }
}
