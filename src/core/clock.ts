import { durationMillis } from './duration.js';
import { invalidField } from './errors.js';
import { END_OF_TIME } from './time.js';

/**
 * An account's virtual clock. It is stored as an anchor pair (a real instant and the virtual
 * instant it maps to) plus a speed, so reading it costs one multiplication and it survives restarts:
 * virtual now = anchorVirtual + (real now - anchorReal) * speed, or anchorVirtual when frozen.
 * All values are milliseconds since the Unix epoch.
 */
export interface ClockState {
  anchorReal: number;
  anchorVirtual: number;
  speed: number;
  frozen: boolean;
}

export const MAX_CLOCK_SPEED = 1_000_000;

export function startClock(realNow: number, speed: number): ClockState {
  return { anchorReal: realNow, anchorVirtual: realNow, speed, frozen: false };
}

/** What the clock reads at the real instant `realNow`; a clock that runs stops at the end of time. */
export function clockNow(clock: ClockState, realNow: number): number {
  if (clock.frozen) return Math.min(clock.anchorVirtual, END_OF_TIME);
  return Math.min(END_OF_TIME, Math.floor(clock.anchorVirtual + (realNow - clock.anchorReal) * clock.speed));
}

/** The same clock re-anchored at `realNow`, so a later change of speed does not rewrite the past. */
function reanchor(clock: ClockState, realNow: number, virtualNow = clockNow(clock, realNow)): ClockState {
  return { ...clock, anchorReal: realNow, anchorVirtual: virtualNow };
}

export function configureClock(
  clock: ClockState,
  change: { speed?: number | undefined; frozen?: boolean | undefined },
  realNow: number,
): ClockState {
  const next = reanchor(clock, realNow);
  return { ...next, speed: change.speed ?? next.speed, frozen: change.frozen ?? next.frozen };
}

/** Moves the clock to `target`; the caller has already checked that it is not in the past. */
export function moveClockTo(clock: ClockState, target: number, realNow: number): ClockState {
  return reanchor(clock, realNow, target);
}

/**
 * Parses the contract's durations: a number of seconds, or a string such as "90s", "5m", "2h",
 * "3d". Returns milliseconds.
 */
export function parseDuration(value: unknown, field: string): number {
  const millis = durationMillis(value);
  if (millis === undefined) {
    throw invalidField(
      field,
      `'${field}' must be a number of seconds or a duration such as "90s", "5m", "2h", "3d".`,
    );
  }
  if (millis < 0)
    throw invalidField(field, `'${field}' must not be negative: the clock never moves backwards.`);
  return Math.round(millis);
}
