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
    private readonly save: (times: ReadonlyMap<string, number>) => void,
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
    this.timer = setInterval(() => this.flush(), intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and writes what is left (the database is still open). */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.flush();
  }

  /** Writes the times noted since the last write; true when nothing is left unwritten. */
  flush(): boolean {
    if (this.unsaved.size === 0) return true;
    try {
      // Synchronous: no request can note a use between the write and the clear.
      this.save(this.unsaved);
      this.unsaved.clear();
      this.notice.succeeded();
      return true;
    } catch (error) {
      this.notice.failed(error);
      return false;
    }
  }
}
