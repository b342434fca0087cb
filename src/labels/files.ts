import { LRUCache } from 'lru-cache';
import { carrierName, serviceName } from '../rates/carriers.js';
import type { ShipmentRecord } from '../shipments/store.js';
import type { LabelDocument } from './render/document.js';
import type { RenderedLabel } from './render/index.js';
import type { LabelRenderer } from './render/pool.js';
import type { LabelRecord } from './store.js';

const CACHE_BYTES = 64 * 1024 * 1024;

/**
 * The label files. Rendering is a pure function of the label and its shipment, so files are not
 * stored: they are rendered once, kept in a bounded in-memory cache, and rendered again (to the same
 * bytes) after a restart or an eviction.
 */
export class LabelFiles {
  constructor(private readonly renderer: LabelRenderer) {}

  private readonly cache = new LRUCache<string, Promise<RenderedLabel>>({
    maxSize: CACHE_BYTES,
    sizeCalculation: () => 64 * 1024,
  });

  get(label: LabelRecord, shipment: ShipmentRecord): Promise<RenderedLabel> {
    return this.cached(label.id, labelDocument(label, shipment));
  }

  /** The label drawn as a PNG whatever its format, for the dashboard to show (kept apart from its file). */
  preview(label: LabelRecord, shipment: ShipmentRecord): Promise<RenderedLabel> {
    const doc = labelDocument(label, shipment);
    return doc.format === 'png'
      ? this.get(label, shipment)
      : this.cached(`${label.id}:png`, { ...doc, format: 'png' });
  }

  private cached(key: string, doc: LabelDocument): Promise<RenderedLabel> {
    const cached = this.cache.get(key);
    if (cached) return cached;
    const file = this.renderer.render(doc);
    this.cache.set(key, file);
    file.then(
      // Counted at a typical size while pending; re-inserted with its real size once known.
      (rendered) => {
        if (this.cache.get(key) === file) this.cache.set(key, file, { size: rendered.bytes.byteLength || 1 });
      },
      () => {
        if (this.cache.peek(key) === file) this.cache.delete(key);
      },
    );
    return file;
  }

  close(): Promise<void> {
    return this.renderer.close();
  }
}

export function labelDocument(label: LabelRecord, shipment: ShipmentRecord): LabelDocument {
  return {
    labelId: label.id,
    trackingNumber: label.trackingNumber,
    carrier: { slug: label.carrier, name: carrierName(label.carrier) },
    service: { code: shipment.service, name: serviceName(shipment.carrier, shipment.service) },
    from: shipment.from,
    to: shipment.to,
    parcel: shipment.parcel,
    reference: shipment.reference,
    createdAt: label.createdAt,
    size: label.size,
    format: label.format,
  };
}
