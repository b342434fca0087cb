import { ApiError, invalidParameter } from '../core/errors.js';
import { formatTimestamp } from '../core/time.js';
import type { State } from '../state.js';
import { type ClockState, clockNow, configureClock, moveClockTo, parseDuration } from './clock.js';
import type { RanJob } from './scheduler.js';

/** The clock as the sandbox controls show it. */
export interface ClockView {
  now: string;
  speed: number;
  frozen: boolean;
}

export function viewClock(clock: ClockState, realNow: number): ClockView {
  return { now: formatTimestamp(clockNow(clock, realNow)), speed: clock.speed, frozen: clock.frozen };
}

function loadClock(state: State, accountId: string): ClockState {
  const account = state.accounts.find(accountId);
  if (!account) throw new ApiError(404, 'not_found', `No account '${accountId}'.`);
  return account.clock;
}

export function readClock(state: State, accountId: string, realNow: number): ClockView {
  return viewClock(loadClock(state, accountId), realNow);
}

export function setClock(
  state: State,
  accountId: string,
  change: { speed?: number | undefined; frozen?: boolean | undefined },
  realNow: number,
): ClockView {
  const next = configureClock(loadClock(state, accountId), change, realNow);
  state.accounts.saveClock(accountId, next);
  state.scheduler.wake();
  return viewClock(next, realNow);
}

export type AdvanceRequest = { by: number | string } | { to: string };

/**
 * Moves the clock forward by a duration or to an instant, running every job that falls due on the
 * way, in time order, before it answers. The clock never moves backwards: a target before the
 * clock's present is a 400 `invalid_parameter`.
 */
export async function advanceClock(
  state: State,
  accountId: string,
  request: AdvanceRequest,
  realNow: () => number,
): Promise<ClockView & { ran: RanJob[] }> {
  const clock = loadClock(state, accountId);
  const now = clockNow(clock, realNow());
  const target = 'by' in request ? now + parseDuration(request.by, 'by') : parseInstant(request.to, 'to');
  if (target < now) {
    throw invalidParameter(
      'to',
      `The clock never moves backwards: ${formatTimestamp(target)} is before the clock's present, ${formatTimestamp(now)}.`,
    );
  }
  let moved = clock;
  const ran = await state.scheduler.runDue(accountId, target, {
    settle: true,
    afterwards: () => {
      // An overlapping advance that got the account's turn first may have moved it further already.
      const current = loadClock(state, accountId);
      moved = clockNow(current, realNow()) >= target ? current : moveClockTo(current, target, realNow());
      state.accounts.saveClock(accountId, moved);
    },
  });
  return { ...viewClock(moved, realNow()), ran };
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

function parseInstant(value: string, field: string): number {
  const millis = ISO_INSTANT.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(millis)) {
    throw new ApiError(
      422,
      'invalid_field',
      `'${field}' must be an ISO 8601 timestamp such as 2026-11-22T08:23:14Z.`,
      {
        field,
      },
    );
  }
  return millis;
}
