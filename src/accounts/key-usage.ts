import type { Logger } from 'pino';
import { BackoffNotice } from '../db/backoff.js';

/** How often the last-used times are written: "last used" is read by people, a few seconds late is fine. */
export const KEY_USAGE_FLUSH_MS = 5000;

/**
 * When each key was last used. Every request authenticates, and a read must never write: on a full
 * disk it would fail, and every request with it. So the times are kept here, and written in the
 * background, all of them in one transaction every few seconds, and once more at shutdown. A write
 * that fails keeps them for the next try. Until written, the time here is the fresher one.
 */
export class KeyUsage {
  private readonly unsaved = new Map<string, number>();
  private readonly notice: BackoffNotice;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly save: (times: ReadonlyMap<string, number>) => Promise<void>,
    logger: Logger,
  ) {
    this.notice = new BackoffNotice(logger, "writing keys' last-used times");
  }

  noteUse(keyId: string, at: number): void {
    this.unsaved.set(keyId, at);
  }

  /** The time not yet written, if any: it wins over the row's. */
  lastUsed(keyId: string): number | undefined {
    return this.unsaved.get(keyId);
  }

  start(intervalMs = KEY_USAGE_FLUSH_MS): void {
    clearInterval(this.timer);
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and writes what is left (the database is still open). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flushing;
    await this.flush();
  }

  private flushing: Promise<boolean> | undefined;

  /** Writes the times noted since the last write; true when nothing is left unwritten. */
  flush(): Promise<boolean> {
    if (this.unsaved.size === 0) return Promise.resolve(true);
    if (this.flushing) return this.flushing;
    // The times taken now are written; a use noted meanwhile waits for the next write, unless it
    // is still the same time.
    const taken = new Map(this.unsaved);
    this.flushing = this.save(taken)
      .then(() => {
        for (const [keyId, at] of taken) if (this.unsaved.get(keyId) === at) this.unsaved.delete(keyId);
        this.notice.succeeded();
        return this.unsaved.size === 0;
      })
      .catch((error: unknown) => {
        this.notice.failed(error);
        return false;
      })
      .finally(() => {
        this.flushing = undefined;
      });
    return this.flushing;
  }
}
