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
    const cached = this.cache.get(label.id);
    if (cached) return cached;
    const file = this.renderer.render(labelDocument(label, shipment));
    this.cache.set(label.id, file);
    file.then(
      // Counted at a typical size while pending; re-inserted with its real size once known.
      (rendered) => {
        if (this.cache.get(label.id) === file)
          this.cache.set(label.id, file, { size: rendered.bytes.byteLength || 1 });
      },
      () => {
        if (this.cache.peek(label.id) === file) this.cache.delete(label.id);
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
