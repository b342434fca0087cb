import { LRUCache } from 'lru-cache';
import { carrierName, serviceName } from '../rates/carriers.js';
import type { ShipmentRecord } from '../shipments/store.js';
import { BUSY_WINDOW_MS, eventLoopBusy } from './busy.js';
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
 * Files rendered ahead and not downloaded yet are kept apart from the downloaded ones, within this
 * many bytes (a few seconds of renders, or a thousand files bought one by one): a label that is
 * bought and never downloaded costs no more than that, however many are bought.
 */
export const AHEAD_CACHE_BYTES = 8 * 1024 * 1024;

/**
 * Files are rendered ahead only while labels are being downloaded: within this long of the last
 * download. Traffic that only buys (a load test, seeding data) would otherwise spend a thread, its
 * memory and idle CPU on files that nobody fetches.
 */
export const AHEAD_AFTER_DOWNLOAD_MS = 10 * 60_000;

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
 * While labels are being downloaded, a bought label's file is rendered ahead of its download, one at a
 * time on a thread of the lowest priority (see pool.ts) and only while requests leave the event loop
 * idle more than half of the time (see busy.ts), so that the first download finds it ready or under
 * way. The newest purchase goes first: its download is the one most likely to come next, and
 * under a burst the oldest waiting are dropped. A download never waits behind that queue, nor long for
 * a thread that a busy machine starves: a file still waiting is taken out of the queue and rendered at
 * once, and a download that finds its file rendering ahead waits for that render, but past a grace
 * renders the file itself too and takes whichever is done first (the same bytes).
 */
export class LabelFiles {
  /** Files downloaded (or previewed), and renders under way for a download. */
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
  private ahead: { key: string; file: Promise<RenderedLabel> } | undefined;
  /** Files rendered ahead, until their download moves them to `cache`. */
  private readonly renderedAhead: LRUCache<string, RenderedLabel>;
  private aheadScheduled = false;
  /** Set while renders ahead wait for the event loop to be less busy. */
  private aheadPaused: NodeJS.Timeout | undefined;
  private closed = false;

  private readonly joinGraceMs: number;
  private readonly aheadAfterDownloadMs: number;
  private readonly now: () => number;
  private readonly busy: () => boolean;
  private lastDownloadAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly renderer: LabelRenderer,
    options: {
      aheadQueueLimit?: number;
      aheadCacheBytes?: number;
      joinGraceMs?: number;
      /** `Infinity`: render ahead whether or not labels are downloaded. */
      aheadAfterDownloadMs?: number;
      /** Milliseconds of the machine's monotonic clock. */
      now?: () => number;
      /** Whether requests keep the event loop busy (renders ahead then wait). */
      busy?: () => boolean;
    } = {},
  ) {
    this.waiting = new LRUCache({ max: options.aheadQueueLimit ?? AHEAD_QUEUE_LIMIT });
    this.renderedAhead = new LRUCache({
      maxSize: options.aheadCacheBytes ?? AHEAD_CACHE_BYTES,
      sizeCalculation: (file) => file.bytes.byteLength || 1,
    });
    this.joinGraceMs = options.joinGraceMs ?? AHEAD_JOIN_GRACE_MS;
    this.aheadAfterDownloadMs = options.aheadAfterDownloadMs ?? AHEAD_AFTER_DOWNLOAD_MS;
    this.now = options.now ?? (() => performance.now());
    this.busy = options.busy ?? eventLoopBusy();
  }

  /** A label's file, for a download. */
  get(label: LabelRecord, shipment: ShipmentRecord): Promise<RenderedLabel> {
    this.lastDownloadAt = this.now();
    return this.cached(label.id, labelDocument(label, shipment));
  }

  /** The label drawn as a PNG whatever its format, for the dashboard to show (kept apart from its file). */
  preview(label: LabelRecord, shipment: ShipmentRecord): Promise<RenderedLabel> {
    const doc = labelDocument(label, shipment);
    return this.cached(doc.format === 'png' ? label.id : `${label.id}:png`, { ...doc, format: 'png' });
  }

  /**
   * Queues a freshly bought label's file for a render ahead of its download, while labels are being
   * downloaded. Returns at once: the render starts after the current request has been answered.
   */
  renderAhead(label: LabelRecord, shipment: ShipmentRecord): void {
    const key = label.id;
    if (this.closed || !this.renderer.background) return;
    if (this.now() - this.lastDownloadAt > this.aheadAfterDownloadMs) return;
    if (this.cache.has(key) || this.renderedAhead.has(key) || this.waiting.has(key)) return;
    if (this.ahead?.key === key) return;
    this.waiting.set(key, labelDocument(label, shipment));
    if (this.ahead || this.aheadScheduled || this.aheadPaused) return;
    this.aheadScheduled = true;
    setImmediate(() => {
      this.aheadScheduled = false;
      this.nextAhead();
    });
  }

  private nextAhead(): void {
    const background = this.renderer.background;
    if (this.ahead || this.aheadPaused || this.closed || !background) return;
    if (this.waiting.size === 0) return;
    if (this.busy()) {
      this.aheadPaused = setTimeout(() => {
        this.aheadPaused = undefined;
        this.nextAhead();
      }, BUSY_WINDOW_MS).unref();
      return;
    }
    const newest = this.waiting.entries().next();
    if (newest.done) return;
    const [key, doc] = newest.value;
    this.waiting.delete(key);
    const file = background(doc);
    this.ahead = { key, file };
    file
      .then(
        (rendered) => {
          // Unless a download has taken it meanwhile.
          if (!this.cache.has(key) && !this.closed) this.renderedAhead.set(key, rendered);
        },
        // A failed render is forgotten: the download renders the file itself.
        () => {},
      )
      .finally(() => {
        this.ahead = undefined;
        this.nextAhead();
      });
  }

  private cached(key: string, doc: LabelDocument): Promise<RenderedLabel> {
    const cached = this.cache.get(key);
    if (cached) return cached;
    const ready = this.renderedAhead.get(key);
    if (ready) {
      this.renderedAhead.delete(key);
      return this.remember(key, Promise.resolve(ready));
    }
    this.waiting.delete(key);
    const ahead = this.ahead?.key === key ? this.ahead.file : undefined;
    return this.remember(key, ahead ? this.join(ahead, doc) : this.renderer.render(doc));
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
    clearTimeout(this.aheadPaused);
    this.waiting.clear();
    this.renderedAhead.clear();
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
