/**
 * CPU per label render, by format, carrier and page size, through the function the render threads
 * call (src/labels/render/index.ts), on this thread. It is bundled first as the render thread's script
 * is (scripts/build.mjs): run by tsx, every function would also pay for a call that keeps its name.
 *
 * Each render is of a different label (its own id, tracking number and barcodes), as a first download
 * is, after a warm-up that loads the renderers and lets the JIT settle. The cases take turns, in
 * rounds, and each figure is the median of its rounds, so that a neighbour's burst of CPU on a shared
 * machine moves one round rather than one case. Usage:
 *
 *   npx tsx bench/render.ts [--count 300] [--rounds 5] [--format pdf,png,zpl]
 *                           [--carrier usps,ups,fedex,dhl_express] [--size 4x6,4x8,letter]
 *                           [--src DIR] [--profile FILE.cpuprofile]
 *
 * `--count` renders per case, over all rounds. `--src` renders with another copy of `src/` (an older
 * commit's, from `git archive`), to compare in one run. `--profile` writes a V8 CPU profile of the
 * measured renders alone, for `npx tsx bench/cpuprofile.ts FILE`; its `dispatch` and `postMessage`
 * are the profiler's own. The benchmark's label downloads (bench/throughput.ts, for bench/load.ts's
 * shipment) are USPS Ground Advantage labels, 4x6: a DataMatrix and a Code 128.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { newId } from '../src/core/ids.js';
import type { LabelDocument, LabelFormat, LabelSize } from '../src/labels/render/document.js';
import type { RenderedLabel } from '../src/labels/render/index.js';
import { trackingNumberFor } from '../src/labels/tracking-number.js';
import { carrierName, serviceName } from '../src/rates/carriers.js';
import { SHIPMENT_REQUEST } from './load.js';

type Render = (doc: LabelDocument) => Promise<RenderedLabel>;

/** Each carrier with the service that a domestic parcel like the benchmark's gets from it. */
const SERVICES: Record<string, string> = {
  usps: 'ground_advantage',
  ups: 'ground',
  fedex: 'ground',
  dhl_express: 'express_domestic',
};

const WARM_UP = 60;

/** The renderers as the render thread runs them: bundled to CommonJS, the heavy packages outside. */
async function bundledRenderer(src: string): Promise<Render> {
  const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
  const outfile = here(`./results/scratch/render-${process.pid}.cjs`);
  await build({
    entryPoints: [resolve(src, 'labels/render/index.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    logLevel: 'warning',
    external: ['@resvg/resvg-js', 'pdf-lib', 'bwip-js', 'opentype.js'],
    inject: [here('../src/build/import-meta-url.ts')],
    define: { 'import.meta.url': 'importMetaUrl' },
  });
  try {
    // Loaded whole: the renderers that index.ts imports on first use are in the bundle.
    return (createRequire(import.meta.url)(outfile) as { renderLabel: Render }).renderLabel;
  } finally {
    rmSync(outfile, { force: true });
  }
}

let labelsMade = 0;

function labelDocument(carrier: string, size: LabelSize, format: LabelFormat): LabelDocument {
  const at = Date.UTC(2026, 0, 5, 9) + labelsMade++ * 1000;
  const labelId = newId('lbl', at);
  const service = SERVICES[carrier] ?? 'ground';
  return {
    labelId,
    trackingNumber: trackingNumberFor(carrier, labelId),
    carrier: { slug: carrier, name: carrierName(carrier) },
    service: { code: service, name: serviceName(carrier, service) },
    from: SHIPMENT_REQUEST.from,
    to: SHIPMENT_REQUEST.to,
    parcel: SHIPMENT_REQUEST.parcel,
    reference: SHIPMENT_REQUEST.reference,
    createdAt: at,
    size,
    format,
  };
}

interface Case {
  format: LabelFormat;
  size: LabelSize;
  carrier: string;
  /** CPU and wall milliseconds per render, one of each a round. */
  cpuMs: number[];
  wallMs: number[];
  bytes: number;
}

async function round(render: Render, item: Case, count: number): Promise<void> {
  const docs = Array.from({ length: count }, () => labelDocument(item.carrier, item.size, item.format));
  let bytes = 0;
  const cpu = process.cpuUsage();
  const wall = performance.now();
  for (const doc of docs) bytes += (await render(doc)).bytes.byteLength;
  const wallMs = performance.now() - wall;
  const used = process.cpuUsage(cpu);
  item.cpuMs.push((used.user + used.system) / 1000 / count);
  item.wallMs.push(wallMs / count);
  item.bytes = Math.round(bytes / count);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      count: { type: 'string', default: '300' },
      rounds: { type: 'string', default: '5' },
      format: { type: 'string', default: 'pdf,png,zpl' },
      carrier: { type: 'string', default: 'usps,ups,fedex,dhl_express' },
      size: { type: 'string', default: '4x6' },
      src: { type: 'string', default: fileURLToPath(new URL('../src', import.meta.url)) },
      profile: { type: 'string' },
    },
  });
  const rounds = Math.max(1, Number(values.rounds));
  const perRound = Math.max(1, Math.round(Number(values.count) / rounds));
  const list = (text: string) => text.split(',').filter(Boolean);
  const cases: Case[] = [];
  for (const format of list(values.format) as LabelFormat[])
    for (const size of list(values.size) as LabelSize[])
      for (const carrier of list(values.carrier))
        cases.push({ format, size, carrier, cpuMs: [], wallMs: [], bytes: 0 });

  const render = await bundledRenderer(values.src);
  for (const item of cases)
    for (let n = 0; n < WARM_UP; n++) await render(labelDocument(item.carrier, item.size, item.format));

  let session: Session | undefined;
  if (values.profile) {
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    // 100 µs rather than the default 1 ms: a render takes a few milliseconds.
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
  }
  for (let n = 0; n < rounds; n++) for (const item of cases) await round(render, item, perRound);
  if (session && values.profile) {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    writeFileSync(values.profile, JSON.stringify(profile));
  }

  const lines = [`${perRound * rounds} renders a case, median of ${rounds} rounds; ms a render`];
  for (const { format, size, carrier, cpuMs, wallMs, bytes } of cases)
    lines.push(
      `${format.padEnd(4)} ${size.padEnd(7)} ${carrier.padEnd(12)}` +
        `${median(cpuMs).toFixed(2).padStart(7)} CPU (${Math.min(...cpuMs).toFixed(2)} to ` +
        `${Math.max(...cpuMs).toFixed(2)})${median(wallMs).toFixed(2).padStart(7)} wall` +
        `${String(bytes).padStart(8)} bytes`,
    );
  if (values.profile) lines.push(`profile of the measured renders: ${values.profile}`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
