import { describe, expect, it } from 'vitest';
import { clockNow, configureClock, moveClockTo, parseDuration, startClock } from '../src/core/clock.js';
import { ApiError } from '../src/core/errors.js';
import { formatTimestamp } from '../src/core/time.js';

const T0 = Date.UTC(2026, 10, 22, 8, 0, 0);

describe('the account clock', () => {
  it('starts at real time and runs at its speed', () => {
    const clock = startClock(T0, 60);
    expect(clockNow(clock, T0)).toBe(T0);
    expect(clockNow(clock, T0 + 1000)).toBe(T0 + 60_000);
  });

  it('stands still while frozen and resumes from where it stood', () => {
    const frozen = configureClock(startClock(T0, 1), { frozen: true }, T0 + 5000);
    expect(clockNow(frozen, T0 + 999_999)).toBe(T0 + 5000);
    const resumed = configureClock(frozen, { frozen: false }, T0 + 10_000);
    expect(clockNow(resumed, T0 + 11_000)).toBe(T0 + 6000);
  });

  it('changes speed without rewriting the time already passed', () => {
    const clock = configureClock(startClock(T0, 1), { speed: 3600 }, T0 + 10_000);
    expect(clockNow(clock, T0 + 10_000)).toBe(T0 + 10_000);
    expect(clockNow(clock, T0 + 11_000)).toBe(T0 + 10_000 + 3_600_000);
  });

  it('moves to a target and keeps running from there', () => {
    const clock = moveClockTo(startClock(T0, 2), T0 + 86_400_000, T0 + 1000);
    expect(clockNow(clock, T0 + 2000)).toBe(T0 + 86_400_000 + 2000);
  });
});

describe('durations', () => {
  it.each([
    [90, 90_000],
    ['90', 90_000],
    ['90s', 90_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['3d', 259_200_000],
    ['1.5h', 5_400_000],
    [0, 0],
  ])('reads %j', (input, millis) => {
    expect(parseDuration(input, 'by')).toBe(millis);
  });

  it.each(['', 'soon', '2 fortnights', null, true, {}])('rejects %j as 422 invalid_field', (input) => {
    try {
      parseDuration(input, 'by');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).code).toBe('invalid_field');
      expect((error as ApiError).field).toBe('by');
    }
  });

  it('rejects a negative duration as moving backwards (422 invalid_field)', () => {
    expect(() => parseDuration('-5m', 'by')).toThrow(/never moves backwards/);
    expect(() => parseDuration(-1, 'by')).toThrow(ApiError);
  });
});

describe('timestamps', () => {
  it('are UTC, whole seconds, with Z', () => {
    expect(formatTimestamp(Date.UTC(2026, 10, 22, 8, 23, 14, 999))).toBe('2026-11-22T08:23:14Z');
  });
});
