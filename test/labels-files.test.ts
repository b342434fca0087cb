import type { EventLoopUtilization } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import { SqliteSql } from '../src/db/sqlite.js';
import { BUSY_WINDOW_MS, eventLoopBusy } from '../src/labels/busy.js';
import {
  AHEAD_AFTER_DOWNLOAD_MS,
  AHEAD_JOIN_GRACE_MS,
  LabelFiles,
  labelDocument,
} from '../src/labels/files.js';
import type { LabelDocument } from '../src/labels/render/document.js';
import { LABEL_CONTENT_TYPES, type RenderedLabel } from '../src/labels/render/index.js';
import type { LabelRenderer } from '../src/labels/render/pool.js';
import type { LabelRecord } from '../src/labels/store.js';
import type { ShipmentRecord } from '../src/shipments/store.js';
import { createTestSandbox, expectError, type TestSandbox } from './helpers.js';

/** A render the test finishes by hand: which thread it was asked of, and for which label. */
interface Render {
  thread: 'download' | 'ahead';
  labelId: string;
  doc: LabelDocument;
  finish(): void;
  fail(): void;
}

/** A renderer whose renders wait for the test; a file's bytes name its label and the thread. */
function manualRenderer(options: { background?: boolean } = {}) {
  const renders: Render[] = [];
  const on =
    (thread: Render['thread']) =>
    (doc: LabelDocument): Promise<RenderedLabel> =>
      new Promise((resolve, reject) => {
        renders.push({
          thread,
          labelId: doc.labelId,
          doc,
          finish: () =>
            resolve({
              bytes: new TextEncoder().encode(`${doc.labelId} ${thread}`),
              contentType: LABEL_CONTENT_TYPES[doc.format],
              extension: doc.format,
            }),
          fail: () => reject(new Error('render failed')),
        });
      });
  const renderer: LabelRenderer = {
    render: on('download'),
    ...(options.background === false ? {} : { background: on('ahead') }),
    close: async () => {},
  };
  return { renderer, renders };
}

/** Renders ahead at any time: whether or not labels were downloaded lately, however busy the process. */
const ALWAYS_AHEAD = { aheadAfterDownloadMs: Number.POSITIVE_INFINITY, busy: () => false };

const text = (file: RenderedLabel) => new TextDecoder().decode(file.bytes);
const summary = (renders: Render[]) => renders.map((r) => `${r.labelId} ${r.thread}`);

/** Labels bought through the API, with the records the files are rendered from. */
async function boughtLabels(count: number, given?: TestSandbox) {
  const sandbox = given ?? (await createTestSandbox());
  const labels: Array<{ label: LabelRecord; shipment: ShipmentRecord }> = [];
  for (let i = 0; i < count; i++) {
    const shipment = await sandbox.newShipment();
    const response = await sandbox.call('POST', '/v1/labels', { body: { shipment_id: shipment.id } });
    expect(response.status).toBe(201);
    const label = (await sandbox.stores.labels.find(sandbox.db, DEFAULT_ACCOUNT.id, response.json.id))!;
    const record = (await sandbox.stores.shipments.find(sandbox.db, DEFAULT_ACCOUNT.id, label.shipmentId))!;
    labels.push({ label, shipment: record });
  }
  return labels;
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('label files rendered ahead of their download', () => {
  it('render a bought label on the background thread, and its download takes that file', async () => {
    const [bought] = await boughtLabels(1);
    const { label, shipment } = bought!;
    const { renderer, renders } = manualRenderer();
    const files = new LabelFiles(renderer, ALWAYS_AHEAD);
    files.renderAhead(label, shipment);
    // Not on the purchase's own turn: the render starts once the request has been answered.
    expect(renders).toEqual([]);
    await nextTurn();
    expect(summary(renders)).toEqual([`${label.id} ahead`]);
    expect(renders[0]!.doc).toEqual(labelDocument(label, shipment));
    renders[0]!.finish();
    await nextTurn();
    expect(text(await files.get(label, shipment))).toBe(`${label.id} ahead`);
    // Bought again (a retried call) or downloaded again: nothing renders twice.
    files.renderAhead(label, shipment);
    await nextTurn();
    expect(text(await files.get(label, shipment))).toBe(`${label.id} ahead`);
    expect(renders).toHaveLength(1);
  });

  it('let a download wait for its render ahead under way, and past a grace render the file itself too', async () => {
    const [first, second] = await boughtLabels(2);
    const { renderer, renders } = manualRenderer();
    const files = new LabelFiles(renderer, ALWAYS_AHEAD);

    // The render ahead finishes in time: the download takes it, and renders nothing itself.
    files.renderAhead(first!.label, first!.shipment);
    await nextTurn();
    const download = files.get(first!.label, first!.shipment);
    renders[0]!.finish();
    expect(text(await download)).toBe(`${first!.label.id} ahead`);
    expect(summary(renders)).toEqual([`${first!.label.id} ahead`]);

    // The thread ahead is starved (a busy machine): past the grace, the download's own render answers.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    files.renderAhead(second!.label, second!.shipment);
    await nextTurn();
    const starved = files.get(second!.label, second!.shipment);
    const again = files.get(second!.label, second!.shipment);
    vi.advanceTimersByTime(AHEAD_JOIN_GRACE_MS - 1);
    expect(renders).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(summary(renders).slice(1)).toEqual([`${second!.label.id} ahead`, `${second!.label.id} download`]);
    renders[2]!.finish();
    expect(text(await starved)).toBe(`${second!.label.id} download`);
    expect(text(await again)).toBe(`${second!.label.id} download`);
    renders[1]!.finish();
    expect(text(await files.get(second!.label, second!.shipment))).toBe(`${second!.label.id} download`);
    expect(renders).toHaveLength(3);
  });

  it('render the newest purchase first, and leave the oldest to their download beyond the queue', async () => {
    const bought = await boughtLabels(5);
    const ids = bought.map(({ label }) => label.id);
    const { renderer, renders } = manualRenderer();
    const files = new LabelFiles(renderer, { ...ALWAYS_AHEAD, aheadQueueLimit: 2 });
    files.renderAhead(bought[0]!.label, bought[0]!.shipment);
    await nextTurn();
    // While the first renders, four more are bought: the queue of two keeps the newest.
    for (const { label, shipment } of bought.slice(1)) files.renderAhead(label, shipment);
    for (let next = 0; next < 3; next++) {
      renders[next]?.finish();
      await nextTurn();
    }
    expect(summary(renders)).toEqual([`${ids[0]} ahead`, `${ids[4]} ahead`, `${ids[3]} ahead`]);

    // The dropped ones render on their download, and only then.
    const dropped = files.get(bought[1]!.label, bought[1]!.shipment);
    expect(summary(renders).slice(3)).toEqual([`${ids[1]} download`]);
    renders[3]!.finish();
    expect(text(await dropped)).toBe(`${ids[1]} download`);
  });

  it('keep files rendered ahead within their own budget, and downloaded ones apart from it', async () => {
    const bought = await boughtLabels(4);
    const ids = bought.map(({ label }) => label.id);
    const { renderer, renders } = manualRenderer();
    // Room for two files rendered ahead (each file here is a label id and a word).
    const size = new TextEncoder().encode(`${ids[0]} ahead`).byteLength;
    const files = new LabelFiles(renderer, { ...ALWAYS_AHEAD, aheadCacheBytes: 2 * size });
    const renderAhead = async (index: number) => {
      files.renderAhead(bought[index]!.label, bought[index]!.shipment);
      await nextTurn();
      renders.at(-1)!.finish();
      await nextTurn();
    };
    await renderAhead(0);
    // Downloaded: it leaves the budget of the files rendered ahead for the cache of downloaded ones.
    expect(text(await files.get(bought[0]!.label, bought[0]!.shipment))).toBe(`${ids[0]} ahead`);
    await renderAhead(1);
    await renderAhead(2);
    await renderAhead(3);
    expect(summary(renders)).toEqual(ids.map((id) => `${id} ahead`));

    // The oldest not downloaded was dropped; the others, and the downloaded one, are still there.
    for (const index of [0, 2, 3])
      expect(text(await files.get(bought[index]!.label, bought[index]!.shipment))).toBe(
        `${ids[index]} ahead`,
      );
    expect(renders).toHaveLength(4);
    const dropped = files.get(bought[1]!.label, bought[1]!.shipment);
    expect(summary(renders).slice(4)).toEqual([`${ids[1]} download`]);
    renders[4]!.finish();
    expect(text(await dropped)).toBe(`${ids[1]} download`);
  });

  it('take a waiting file out of the queue for its download, which never waits behind it', async () => {
    const [older, newer] = await boughtLabels(2);
    const { renderer, renders } = manualRenderer();
    const files = new LabelFiles(renderer, ALWAYS_AHEAD);
    files.renderAhead(older!.label, older!.shipment);
    files.renderAhead(newer!.label, newer!.shipment);
    await nextTurn();
    expect(summary(renders)).toEqual([`${newer!.label.id} ahead`]);

    const download = files.get(older!.label, older!.shipment);
    expect(summary(renders)).toEqual([`${newer!.label.id} ahead`, `${older!.label.id} download`]);
    renders[1]!.finish();
    expect(text(await download)).toBe(`${older!.label.id} download`);
    renders[0]!.finish();
    await nextTurn();
    await nextTurn();
    expect(renders).toHaveLength(2);
  });

  it('forget a failed render ahead, so that the download renders the file itself at once', async () => {
    const [before, during] = await boughtLabels(2);
    const { renderer, renders } = manualRenderer();
    const files = new LabelFiles(renderer, ALWAYS_AHEAD);
    // Failed before the download.
    files.renderAhead(before!.label, before!.shipment);
    await nextTurn();
    renders[0]!.fail();
    await nextTurn();
    const download = files.get(before!.label, before!.shipment);
    expect(summary(renders)).toEqual([`${before!.label.id} ahead`, `${before!.label.id} download`]);
    renders[1]!.finish();
    expect(text(await download)).toBe(`${before!.label.id} download`);

    // Failed while the download waited for it: no need to wait for the grace.
    files.renderAhead(during!.label, during!.shipment);
    await nextTurn();
    const waiting = files.get(during!.label, during!.shipment);
    renders[2]!.fail();
    await nextTurn();
    expect(summary(renders).slice(2)).toEqual([`${during!.label.id} ahead`, `${during!.label.id} download`]);
    renders[3]!.finish();
    expect(text(await waiting)).toBe(`${during!.label.id} download`);
  });

  it('render nothing ahead where files render on the main thread, nor once closed', async () => {
    const [first, second] = await boughtLabels(2);
    const inline = manualRenderer({ background: false });
    new LabelFiles(inline.renderer, ALWAYS_AHEAD).renderAhead(first!.label, first!.shipment);
    await nextTurn();
    expect(inline.renders).toEqual([]);

    const threaded = manualRenderer();
    const files = new LabelFiles(threaded.renderer, ALWAYS_AHEAD);
    files.renderAhead(first!.label, first!.shipment);
    await files.close();
    files.renderAhead(second!.label, second!.shipment);
    await nextTurn();
    expect(threaded.renders).toEqual([]);
  });

  it('wait while requests keep the event loop busy', async () => {
    const [bought] = await boughtLabels(1);
    const { renderer, renders } = manualRenderer();
    let busy = true;
    const files = new LabelFiles(renderer, { ...ALWAYS_AHEAD, busy: () => busy });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    files.renderAhead(bought!.label, bought!.shipment);
    await nextTurn();
    vi.advanceTimersByTime(10 * BUSY_WINDOW_MS);
    expect(renders).toEqual([]);
    busy = false;
    vi.advanceTimersByTime(BUSY_WINDOW_MS);
    expect(summary(renders)).toEqual([`${bought!.label.id} ahead`]);
  });

  it('render ahead only within ten minutes of a download', async () => {
    const bought = await boughtLabels(4);
    const { renderer, renders } = manualRenderer();
    const clock = { now: 0 };
    const files = new LabelFiles(renderer, { now: () => clock.now, busy: () => false });
    const renderAhead = async (index: number) => {
      files.renderAhead(bought[index]!.label, bought[index]!.shipment);
      await nextTurn();
    };

    // Nothing downloaded yet: bought labels wait for their download.
    await renderAhead(0);
    expect(renders).toEqual([]);
    const download = files.get(bought[0]!.label, bought[0]!.shipment);
    renders[0]!.finish();
    await download;

    clock.now += AHEAD_AFTER_DOWNLOAD_MS;
    await renderAhead(1);
    expect(summary(renders).slice(1)).toEqual([`${bought[1]!.label.id} ahead`]);
    renders[1]!.finish();
    await nextTurn();

    clock.now += 1;
    await renderAhead(2);
    expect(renders).toHaveLength(2);
    // Previews are no downloads.
    const preview = files.preview(bought[2]!.label, bought[2]!.shipment);
    renders[2]!.finish();
    await preview;
    await renderAhead(3);
    expect(renders).toHaveLength(3);
  });
});

/**
 * Whether the purchase of the label is still uncommitted, asked at the moment of the call: SQLite's
 * one connection says whether a transaction is open on it; on PostgreSQL, a read on another of the
 * pool's connections does not see the label until its purchase commits.
 */
function inTransactionNow(sandbox: TestSandbox, labelId: string): Promise<boolean> {
  if (sandbox.db instanceof SqliteSql) return Promise.resolve(sandbox.db.connection.inTransaction);
  return sandbox.db
    .value<number>('SELECT count(*) FROM labels WHERE id = ?', [labelId])
    .then((count) => count === 0);
}

describe('buying a label', () => {
  it('queues its file to render ahead once the purchase has committed, and nothing for a refused one', async () => {
    const sandbox = await createTestSandbox();
    const queued: Array<{ labelId: string; shipmentStatus: string; inTransaction: Promise<boolean> }> = [];
    vi.spyOn(LabelFiles.prototype, 'renderAhead').mockImplementation((label, shipment) => {
      queued.push({
        labelId: label.id,
        shipmentStatus: shipment.status,
        inTransaction: inTransactionNow(sandbox, label.id),
      });
    });
    const [bought] = await boughtLabels(1, sandbox);
    const answered = await Promise.all(
      queued.map(async (entry) => ({ ...entry, inTransaction: await entry.inTransaction })),
    );
    expect(answered).toEqual([
      { labelId: bought!.label.id, shipmentStatus: 'label_generated', inTransaction: false },
    ]);
    expectError(
      await sandbox.call('POST', '/v1/labels', { body: { shipment_id: bought!.shipment.id } }),
      422,
      'label_already_exists',
      'shipment_id',
    );
    expect(queued).toHaveLength(1);
  });
});

describe('the event loop', () => {
  it('counts as busy when its code ran over half of the last 100 ms or more', () => {
    // Fake readings: `idle` and `active` in ms since start, as performance.eventLoopUtilization gives.
    const clock = { now: 0, active: 0 };
    const reading = () => ({ idle: clock.now - clock.active, active: clock.active, utilization: 0 });
    const utilization = (current?: EventLoopUtilization, previous?: EventLoopUtilization) => {
      if (!current || !previous) return reading();
      const active = current.active - previous.active;
      const idle = current.idle - previous.idle;
      return { idle, active, utilization: active / (active + idle) };
    };
    const busy = eventLoopBusy(utilization, () => clock.now);
    const run = (ms: number, active: number) => {
      clock.now += ms;
      clock.active += active;
    };

    run(BUSY_WINDOW_MS, 0.6 * BUSY_WINDOW_MS);
    expect(busy()).toBe(true);
    // Judged again only once a window has passed.
    run(BUSY_WINDOW_MS / 2, 0);
    expect(busy()).toBe(true);
    run(BUSY_WINDOW_MS / 2, 0);
    expect(busy()).toBe(false);
    run(4 * BUSY_WINDOW_MS, 2 * BUSY_WINDOW_MS);
    expect(busy()).toBe(false);
    run(BUSY_WINDOW_MS, 0.9 * BUSY_WINDOW_MS);
    expect(busy()).toBe(true);
  });
});
