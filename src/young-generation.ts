import { PerformanceObserver } from 'node:perf_hooks';
import { debuglog } from 'node:util';
import v8 from 'node:v8';

/** What the young generation (V8's new space: both its semi-spaces) may grow to once the sandbox serves. */
export const YOUNG_GENERATION_CAP = 8 * 1024 * 1024;

const debug = debuglog('shipping-sandbox-heap');

/**
 * V8's young generation, where every object starts, is doubled whenever enough objects survive a
 * collection, up to 32 MiB (two semi-spaces of 16). A busy sandbox gets there within its first
 * thousands of requests (the journal and the report keep each request a while) and keeps it resident
 * for good; held at 8 MiB (`--max-semi-space-size=4`), a sandbox holding 100,000 shipments in memory
 * was 23 MiB smaller, for the same CPU a request within the noise (`bench/cpu-per-request.ts`, three
 * rounds each: creating a shipment 267 µs against 281, reading one 90 against 87, a list 81 against 72).
 *
 * That flag belongs to node's command line, which the sandbox does not choose (`node dist/main.js` in
 * Docker, in `npm start`, in CI scripts), and V8 fixes the limit it sets as it starts. What V8 reads
 * each time it grows the space is its growth factor, which can be set while it runs (its command line
 * raises anything under 2), and 1 stops the growth. So: the space grows as V8 likes while the bundle
 * is compiled and loaded (4 MiB by then); it is held there while the server starts (`hold…`: left to
 * itself it reached 16 MiB by the time the sandbox was ready, the start's many collections coming too
 * fast to be watched; held, the start took the same CPU, 40 starts each); once it serves (`cap…`), the
 * factor takes it from its size to the cap in one step, and is 1 from there, or again what reaches the
 * cap should V8 shrink the space (it does when the process is idle). V8 resizes the space only in a
 * collection, after each of which this looks. A start with a semi-space flag of its own is left as it
 * asked; where V8 ignores the factor, the space grows as it would have, and nothing else changes.
 */
export function holdYoungGeneration(): void {
  if (sizedByTheCommandLine()) return;
  setGrowthFactor(1);
}

/** Lets the young generation grow to the cap, and no further (see `holdYoungGeneration`). */
export function capYoungGeneration(): void {
  if (sizedByTheCommandLine()) return;
  const steer = (always = false) => {
    const size = newSpaceSize();
    const wanted =
      size > 0 && size < YOUNG_GENERATION_CAP ? Math.max(2, Math.floor(YOUNG_GENERATION_CAP / size)) : 1;
    if (wanted !== factor) setGrowthFactor(wanted);
    else if (!always) return;
    debug(`young generation at ${size / 1024 / 1024} MiB: growth factor ${wanted}`);
  };
  new PerformanceObserver(() => steer()).observe({ entryTypes: ['gc'] });
  // Said once as it starts serving, whatever it finds (NODE_DEBUG=shipping-sandbox-heap).
  steer(true);
}

/** V8's own until set here. */
let factor = 2;
function setGrowthFactor(wanted: number): void {
  v8.setFlagsFromString(`--semi-space-growth-factor=${wanted}`);
  factor = wanted;
}

function sizedByTheCommandLine(): boolean {
  return /semi[-_]space/.test(`${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`);
}

function newSpaceSize(): number {
  return v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}
