import { describe, expect, it } from 'vitest';
import { formatLine } from '../src/logger.js';

describe('a readable log line', () => {
  const base = { level: 30, time: '2026-11-22T08:00:00.000Z', account: 'acct_1' };

  it('says a request in one line', () => {
    expect(
      formatLine({
        ...base,
        msg: 'request',
        method: 'POST',
        path: '/v1/labels',
        status: 201,
        duration_ms: 3.2,
      }),
    ).toBe('POST /v1/labels 201 3.2 ms  acct_1');
  });

  it('says a step and a delivery in one line', () => {
    expect(
      formatLine({
        ...base,
        msg: 'step',
        id: 'job_1',
        kind: 'tracking.step',
        subject: 'lbl_1',
        due_at: '2026-11-22T09:00:00Z',
        tracking_number: '9400',
        status: 'in_transit',
      }),
    ).toBe('step tracking.step lbl_1 in_transit 9400  acct_1');
    const delivery = {
      ...base,
      msg: 'delivery',
      webhook: 'wh_1',
      delivery: 'dlv_1',
      event: 'label.generated',
      event_id: 'evt_1',
      attempt: 0,
      duration_ms: 12,
    };
    expect(formatLine({ ...delivery, outcome: 'succeeded', response_status: 200, error: null })).toBe(
      'delivery label.generated evt_1 -> wh_1 try 0 succeeded 200 12 ms  acct_1',
    );
    expect(formatLine({ ...delivery, outcome: 'failed', response_status: null, error: 'timeout' })).toBe(
      'delivery label.generated evt_1 -> wh_1 try 0 failed timeout 12 ms  acct_1',
    );
  });

  it('keeps any other line to its message and its fields', () => {
    expect(
      formatLine({ level: 30, time: 't', msg: 'shutting down', signal: 'SIGTERM', graceMs: 10000 }),
    ).toBe('shutting down signal=SIGTERM graceMs=10000');
  });
});
