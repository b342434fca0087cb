import { backoffDelay } from '../db/backoff.js';

/** The background timer never sleeps longer than this, so clock changes made elsewhere are picked up. */
const MAX_SLEEP_MS = 1000;

/** What one round of background work found. */
export interface Round {
  /** Real milliseconds until the next item falls due on a running clock (infinity for none). */
  sleep: number;
  /** Something ran, and may have scheduled more: plan again at once. */
  again: boolean;
}

/**
 * The background timer: runs a round of due work, then sleeps until the round says more falls due
 * (at most a second), and wakes sooner when work is queued that falls due before it would. A round
 * that fails before reaching any account (reading the queues) backs the whole timer off: 1 s,
 * doubling, at most 30 s. Sleeps are timed on `performance.now()`, not on the (replaceable) wall
 * clock that the account clocks derive from.
 */
export class BackgroundTimer {
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private ticking: Promise<void> | undefined;
  private wokenDuringTick = false;
  /** When the timer fires next (`performance.now()` milliseconds); infinity while a tick runs. */
  private plannedWakeAt = Number.POSITIVE_INFINITY;
  /** Rounds that failed in a row. */
  private failures = 0;

  constructor(
    private readonly round: () => Promise<Round>,
    /** A round failed (it is tried again after the backoff). */
    private readonly roundFailed: (error: unknown) => void,
  ) {}

  get running(): boolean {
    return !this.stopped;
  }

  /** Starts the timer; resolves once the first round has run. */
  start(): Promise<void> {
    this.stopped = false;
    return this.tick();
  }

  /** Stops the timer; resolves once a round under way has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
  }

  /** Plans again now: work was queued, or a clock changed. */
  wake(): void {
    if (this.stopped) return;
    if (this.ticking) {
      // The running round plans again from scratch when it ends.
      this.wokenDuringTick = true;
      return;
    }
    this.arm(0);
  }

  /**
   * Work falls due in `delay` real milliseconds: plan again only if that is before the timer would
   * fire anyway (planning reads every queue, and every label adds work).
   */
  wakeIn(delay: number): void {
    if (this.stopped) return;
    if (performance.now() + delay >= this.plannedWakeAt) return;
    if (this.ticking) this.wokenDuringTick = true;
    else this.arm(delay);
  }

  private arm(delay: number): void {
    clearTimeout(this.timer);
    this.plannedWakeAt = performance.now() + delay;
    this.timer = setTimeout(() => void this.tick(), delay);
    this.timer.unref();
  }

  /** Runs a round, then sleeps until the next item falls due. */
  private async tick(): Promise<void> {
    if (this.ticking) return;
    // The timer has fired: until the tick re-arms it, any new work must make it look again.
    this.plannedWakeAt = Number.POSITIVE_INFINITY;
    let sleep = MAX_SLEEP_MS;
    this.ticking = (async () => {
      const round = await this.round();
      sleep = Math.min(sleep, round.sleep);
      if (round.again) this.wokenDuringTick = true;
    })();
    try {
      await this.ticking;
      this.failures = 0;
    } catch (error) {
      this.failures += 1;
      sleep = backoffDelay(this.failures);
      this.wokenDuringTick = false;
      this.roundFailed(error);
    } finally {
      this.ticking = undefined;
      if (!this.stopped) {
        const delay = this.wokenDuringTick ? 0 : Math.max(sleep, 1);
        this.wokenDuringTick = false;
        this.arm(delay);
      }
    }
  }
}
