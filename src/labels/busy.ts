import { type EventLoopUtilization, performance } from 'node:perf_hooks';

/** Above this share of its time spent running code, the event loop counts as busy. */
export const BUSY_UTILIZATION = 0.5;
/** The event loop's load is judged over at least this long, so that one slow request does not count. */
export const BUSY_WINDOW_MS = 100;

/**
 * Whether this thread's event loop has been busy lately: running code more than half of the time
 * over the last 100 ms or more. Work that can wait asks this before it starts, so that it runs when
 * requests leave the process idle. (A thread's CPU priority is not enough for that: on a machine of
 * two cores, or two hyperthreads of one, a render at the lowest priority still slowed label purchases
 * by a third, sharing the cores' caches and the other work of the machine.)
 */
export function eventLoopBusy(
  utilization: (current?: EventLoopUtilization, previous?: EventLoopUtilization) => EventLoopUtilization = (
    current,
    previous,
  ) => performance.eventLoopUtilization(current, previous),
  now: () => number = () => performance.now(),
): () => boolean {
  let since = utilization();
  let sinceAt = now();
  let busy = false;
  return () => {
    if (now() - sinceAt < BUSY_WINDOW_MS) return busy;
    const current = utilization();
    busy = utilization(current, since).utilization > BUSY_UTILIZATION;
    since = current;
    sinceAt = now();
    return busy;
  };
}
