import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Runs `work` on each item in order, one at a time, and lets the event loop turn after every `chunk`
 * of them. A statement of SQLite resolves its promise at once, so a long loop of them never yields by
 * itself: without the turns, one account's long list would hold every other request until it ends.
 */
export async function eachYielding<T>(
  items: readonly T[],
  chunk: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  for (const [index, item] of items.entries()) {
    if (index > 0 && index % chunk === 0) await nextTurn();
    await work(item);
  }
}
