import {
  type ClockState,
  clockNow,
  configureClock,
  moveClockTo,
  parseDuration,
  startClock,
} from '../core/clock.js';
import { ApiError, invalidField } from '../core/errors.js';
import { DAY, END_OF_TIME, formatTimestamp } from '../core/time.js';
import type { Sql } from '../db/sql.js';
import type { RanJob } from '../scheduler/queue.js';
import type { Scheduler } from '../scheduler/scheduler.js';

/** Where account clocks are kept (the accounts module). */
export interface ClockStore {
  clockOf(accountId: string): Promise<ClockState | undefined>;
  /** Saves the clock, through `q` when given (a reset's transaction). */
  saveClock(accountId: string, clock: ClockState, q?: Sql): Promise<void>;
}

/** The clock as the sandbox controls show it. */
export interface ClockView {
  now: string;
  speed: number;
  frozen: boolean;
}

export type AdvanceRequest = { by: number | string } | { to: string };

const MAX_ADVANCE_DAYS = 3650;
const MAX_ADVANCE_MS = MAX_ADVANCE_DAYS * DAY;

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

  private async load(accountId: string): Promise<ClockState> {
    const clock = await this.deps.clocks.clockOf(accountId);
    if (!clock) throw new ApiError(404, 'not_found', `No account '${accountId}'.`);
    return clock;
  }

  async read(accountId: string): Promise<ClockView> {
    return viewClock(await this.load(accountId), this.deps.realNow());
  }

  async set(
    accountId: string,
    change: { speed?: number | undefined; frozen?: boolean | undefined },
  ): Promise<ClockView> {
    const realNow = this.deps.realNow();
    const next = configureClock(await this.load(accountId), change, realNow);
    await this.deps.clocks.saveClock(accountId, next);
    this.deps.scheduler.wake();
    return viewClock(next, realNow);
  }

  /** Back at real time and the initial speed (an account's reset, inside its transaction `tx`). */
  restart(tx: Sql, accountId: string): Promise<void> {
    return this.deps.clocks.saveClock(accountId, startClock(this.deps.realNow(), this.deps.initialSpeed), tx);
  }

  /**
   * Moves the clock forward by a duration or to an instant, running every job that falls due on the
   * way, in time order, before it answers. The clock never moves backwards: a target before the
   * clock's present is a 422 `invalid_field`. A move is at most ten years, and never past the
   * end of time (9999-12-31T23:59:59Z): beyond either is `422 invalid_field`, and the clock stays.
   */
  async advance(accountId: string, request: AdvanceRequest): Promise<ClockView & { ran: RanJob[] }> {
    const { clocks, scheduler, realNow } = this.deps;
    const field = 'by' in request ? 'by' : 'to';
    const by = 'by' in request ? parseDuration(request.by, 'by') : undefined;
    if (by !== undefined && by > MAX_ADVANCE_MS) {
      throw invalidField('by', `'by' must be at most ${MAX_ADVANCE_DAYS} days (ten years) at a time.`);
    }
    const requestedAt = clockNow(await this.load(accountId), realNow());
    const to = 'to' in request ? parseInstant(request.to, 'to') : undefined;
    if (to !== undefined && to < requestedAt) {
      throw invalidField(
        'to',
        `The clock never moves backwards: ${formatTimestamp(to)} is before the clock's present, ${formatTimestamp(requestedAt)}.`,
      );
    }
    if (to !== undefined && to - requestedAt > MAX_ADVANCE_MS) {
      throw invalidField(
        'to',
        `'to' must be at most ${MAX_ADVANCE_DAYS} days (ten years) after the clock's present, ${formatTimestamp(requestedAt)}.`,
      );
    }
    const tooLate = () =>
      invalidField(
        field,
        `The clock cannot pass the end of time, ${formatTimestamp(END_OF_TIME)}; '${field}' goes beyond it.`,
      );
    if ((to ?? requestedAt + (by ?? 0)) > END_OF_TIME) throw tooLate();

    let target = requestedAt;
    let moved = await this.load(accountId);
    const ran = await scheduler.runDue(
      accountId,
      async () => {
        // Read when the account's turn comes: two advances `by` at once move the clock by both, and
        // one `to` an instant another advance has already passed leaves the clock where it is.
        const now = clockNow(await this.load(accountId), realNow());
        target = by === undefined ? Math.max(now, to ?? now) : now + by;
        if (target > END_OF_TIME) throw tooLate();
        return target;
      },
      {
        settle: true,
        afterwards: async () => {
          const current = await this.load(accountId);
          moved = clockNow(current, realNow()) >= target ? current : moveClockTo(current, target, realNow());
          await clocks.saveClock(accountId, moved);
        },
      },
    );
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
