import {
  type ClockState,
  clockNow,
  configureClock,
  moveClockTo,
  parseDuration,
  startClock,
} from '../core/clock.js';
import { ApiError, invalidParameter } from '../core/errors.js';
import { formatTimestamp } from '../core/time.js';
import type { RanJob, Scheduler } from '../scheduler/scheduler.js';

/** Where account clocks are kept (the accounts module). */
export interface ClockStore {
  clockOf(accountId: string): ClockState | undefined;
  saveClock(accountId: string, clock: ClockState): void;
}

/** The clock as the sandbox controls show it. */
export interface ClockView {
  now: string;
  speed: number;
  frozen: boolean;
}

export type AdvanceRequest = { by: number | string } | { to: string };

export function viewClock(clock: ClockState, realNow: number): ClockView {
  return { now: formatTimestamp(clockNow(clock, realNow)), speed: clock.speed, frozen: clock.frozen };
}

/** The account clock's controls: read it, set its speed, freeze it, move it on. */
export class ClockService {
  constructor(
    private readonly deps: {
      clocks: ClockStore;
      scheduler: Scheduler;
      realNow: () => number;
      /** The speed a reset clock starts at (`--clock-speed`). */
      initialSpeed: number;
    },
  ) {}

  private load(accountId: string): ClockState {
    const clock = this.deps.clocks.clockOf(accountId);
    if (!clock) throw new ApiError(404, 'not_found', `No account '${accountId}'.`);
    return clock;
  }

  read(accountId: string): ClockView {
    return viewClock(this.load(accountId), this.deps.realNow());
  }

  set(accountId: string, change: { speed?: number | undefined; frozen?: boolean | undefined }): ClockView {
    const realNow = this.deps.realNow();
    const next = configureClock(this.load(accountId), change, realNow);
    this.deps.clocks.saveClock(accountId, next);
    this.deps.scheduler.wake();
    return viewClock(next, realNow);
  }

  /** Back at real time and the initial speed (an account's reset). */
  restart(accountId: string): void {
    this.deps.clocks.saveClock(accountId, startClock(this.deps.realNow(), this.deps.initialSpeed));
  }

  /**
   * Moves the clock forward by a duration or to an instant, running every job that falls due on the
   * way, in time order, before it answers. The clock never moves backwards: a target before the
   * clock's present is a 400 `invalid_parameter`.
   */
  async advance(accountId: string, request: AdvanceRequest): Promise<ClockView & { ran: RanJob[] }> {
    const { clocks, scheduler, realNow } = this.deps;
    const clock = this.load(accountId);
    const now = clockNow(clock, realNow());
    const target = 'by' in request ? now + parseDuration(request.by, 'by') : parseInstant(request.to, 'to');
    if (target < now) {
      throw invalidParameter(
        'to',
        `The clock never moves backwards: ${formatTimestamp(target)} is before the clock's present, ${formatTimestamp(now)}.`,
      );
    }
    let moved = clock;
    const ran = await scheduler.runDue(accountId, target, {
      settle: true,
      afterwards: () => {
        // An overlapping advance that got the account's turn first may have moved it further already.
        const current = this.load(accountId);
        moved = clockNow(current, realNow()) >= target ? current : moveClockTo(current, target, realNow());
        clocks.saveClock(accountId, moved);
      },
    });
    return { ...viewClock(moved, realNow()), ran };
  }
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

function parseInstant(value: string, field: string): number {
  const millis = ISO_INSTANT.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(millis)) {
    throw new ApiError(
      422,
      'invalid_field',
      `'${field}' must be an ISO 8601 timestamp such as 2026-11-22T08:23:14Z.`,
      { field },
    );
  }
  return millis;
}
