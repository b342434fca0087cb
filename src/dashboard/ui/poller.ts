/**
 * Live updates by short polling. A browser's `EventSource` cannot send an `Authorization` header, and
 * the key must never travel in a URL; a stream read with `fetch` could, but would need the sandbox to
 * push every change of every module to open connections. Reading the screen's data again every two
 * seconds needs nothing of the server: the dashboard polls `/_sandbox` routes, which are neither
 * rate-limited nor journaled, so it spends none of the account's limits and does not fill its
 * request journal. A forced status or a new delivery shows within two seconds, without a reload.
 */

/** How often a screen's data is read again while the page is visible. */
export const POLL_MS = 2000;

export interface PollerOptions<T> {
  load: () => Promise<T>;
  /** Told every outcome, in order; never after `stop()`. */
  onResult: (result: { data: T } | { error: unknown }) => void;
  everyMs?: number;
  /** Whether the page is hidden: a hidden page reads nothing until it is shown again. */
  isHidden?: () => boolean;
  setTimer?: (run: () => void, ms: number) => unknown;
  clearTimer?: (timer: unknown) => void;
}

/**
 * Reads, then waits `everyMs` after the answer before reading again: never two reads at once, so a
 * slow sandbox is not sent a queue of them. `refresh()` reads at once (after an action); asked while
 * a read is under way, it reads once more as soon as that one ends, so the result reflects the action.
 */
export class Poller<T> {
  private timer: unknown;
  private inFlight = false;
  private again = false;
  private stopped = false;
  private readonly everyMs: number;
  private readonly setTimer: (run: () => void, ms: number) => unknown;
  private readonly clearTimer: (timer: unknown) => void;

  constructor(private readonly options: PollerOptions<T>) {
    this.everyMs = options.everyMs ?? POLL_MS;
    this.setTimer = options.setTimer ?? ((run, ms) => setTimeout(run, ms));
    this.clearTimer = options.clearTimer ?? ((timer) => clearTimeout(timer as ReturnType<typeof setTimeout>));
  }

  start(): void {
    void this.refresh();
  }

  /** Reads now (or right after the read under way); resolves when that read's outcome is out. */
  async refresh(): Promise<void> {
    if (this.stopped) return;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    this.clearTimer(this.timer);
    this.timer = undefined;
    this.inFlight = true;
    let result: { data: T } | { error: unknown };
    try {
      result = { data: await this.options.load() };
    } catch (error) {
      result = { error };
    }
    this.inFlight = false;
    if (this.stopped) return;
    this.options.onResult(result);
    if (this.again) {
      this.again = false;
      return this.refresh();
    }
    this.schedule();
  }

  /** The page was shown again: what it shows may be old, so it reads at once (a polling one does). */
  visible(): void {
    if (Number.isFinite(this.everyMs) && !this.inFlight && this.timer === undefined) void this.refresh();
  }

  stop(): void {
    this.stopped = true;
    this.clearTimer(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.options.isHidden?.() || !Number.isFinite(this.everyMs)) return;
    this.timer = this.setTimer(() => {
      this.timer = undefined;
      void this.refresh();
    }, this.everyMs);
  }
}
