import { LRUCache } from 'lru-cache';
import { carrierName, serviceName } from '../rates/carriers.js';
import type { ShipmentRecord } from '../shipments/store.js';
import type { LabelDocument } from './render/document.js';
import type { RenderedLabel } from './render/index.js';
import type { LabelRenderer } from './render/pool.js';
import type { LabelRecord } from './store.js';

const CACHE_BYTES = 64 * 1024 * 1024;

/**
 * Files waiting to be rendered ahead of their download. Beyond this many, the oldest are left to
 * their first download: a burst of purchases queues a few seconds of renders, not one a purchase.
 */
export const AHEAD_QUEUE_LIMIT = 1_000;

/**
 * How long a download waits for its file's render ahead, under way, before rendering the file itself
 * as well: about a render, so that a download right after its purchase takes the render ahead, and one
 * whose render ahead a busy machine starves waits no longer than that.
 */
export const AHEAD_JOIN_GRACE_MS = 5;

/**
 * The label files. Rendering is a pure function of the label and its shipment, so files are not
 * stored: they are rendered once, kept in a bounded in-memory cache, and rendered again (to the same
 * bytes) after a restart or an eviction.
 *
 * A bought label's file is rendered ahead of its download, one at a time on a thread of the lowest
 * priority (see pool.ts), so that the first download finds it ready or under way. The newest purchase
 * goes first: its download is the one most likely to come next, and under a burst the oldest waiting
 * are dropped. A download never waits behind that queue, nor long for a thread that a busy machine
 * starves: a file still waiting is taken out of the queue and rendered at once, and a download that
 * finds its file rendering ahead waits for that render, but past a grace renders the file itself too
 * and takes whichever is done first (the same bytes).
 */
export class LabelFiles {
  private readonly cache = new LRUCache<string, Promise<RenderedLabel>>({
    maxSize: CACHE_BYTES,
    sizeCalculation: () => 64 * 1024,
  });

  /**
   * Documents of bought labels waiting for a render ahead of their download, by label id. An LRU
   * cache serves as a bounded stack: each addition is the most recent, `entries()` starts from it,
   * and when it is full the oldest is dropped.
   */
  private readonly waiting: LRUCache<string, LabelDocument>;
  /** The render ahead under way (one at a time). */
  private ahead: Promise<RenderedLabel> | undefined;
  private aheadScheduled = false;
  private closed = false;

  private readonly joinGraceMs: number;

  constructor(
    private readonly renderer: LabelRenderer,
    options: { aheadQueueLimit?: number; joinGraceMs?: number } = {},
  ) {
    this.waiting = new LRUCache({ max: options.aheadQueueLimit ?? AHEAD_QUEUE_LIMIT });
    this.joinGraceMs = options.joinGraceMs ?? AHEAD_JOIN_GRACE_MS;
  }

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

  /**
   * Queues a freshly bought label's file for a render ahead of its download. Returns at once: the
   * render starts after the current request has been answered.
   */
  renderAhead(label: LabelRecord, shipment: ShipmentRecord): void {
    if (this.closed || !this.renderer.background) return;
    if (this.cache.has(label.id) || this.waiting.has(label.id)) return;
    this.waiting.set(label.id, labelDocument(label, shipment));
    if (this.ahead || this.aheadScheduled) return;
    this.aheadScheduled = true;
    setImmediate(() => {
      this.aheadScheduled = false;
      this.nextAhead();
    });
  }

  private nextAhead(): void {
    const background = this.renderer.background;
    if (this.ahead || this.closed || !background) return;
    const newest = this.waiting.entries().next();
    if (newest.done) return;
    const [key, doc] = newest.value;
    this.waiting.delete(key);
    const ahead = this.remember(key, background(doc));
    this.ahead = ahead;
    const after = () => {
      this.ahead = undefined;
      this.nextAhead();
    };
    ahead.then(after, after);
  }

  private cached(key: string, doc: LabelDocument): Promise<RenderedLabel> {
    const cached = this.cache.get(key);
    if (cached && cached !== this.ahead) return cached;
    this.waiting.delete(key);
    return this.remember(key, cached ? this.join(cached, doc) : this.renderer.render(doc));
  }

  /** A file rendering ahead, or, should that fail or outlast the grace, the download's own render. */
  private join(ahead: Promise<RenderedLabel>, doc: LabelDocument): Promise<RenderedLabel> {
    return new Promise((resolve, reject) => {
      let rendering = false;
      const renderOwn = () => {
        clearTimeout(grace);
        if (rendering) return;
        rendering = true;
        this.renderer.render(doc).then(resolve, reject);
      };
      const grace = setTimeout(renderOwn, this.joinGraceMs);
      ahead.then((file) => {
        clearTimeout(grace);
        resolve(file);
      }, renderOwn);
    });
  }

  /** Keeps a render (under way or done) as the file of `key`; a failed render is forgotten. */
  private remember(key: string, file: Promise<RenderedLabel>): Promise<RenderedLabel> {
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
    this.closed = true;
    this.waiting.clear();
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
