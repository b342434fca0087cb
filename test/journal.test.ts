import { describe, expect, it } from 'vitest';
import { RequestJournal } from '../src/journal/journal.js';

const entry = (n: number) => ({
  method: 'GET',
  path: `/v1/shipments/${n}`,
  query: '',
  status: 200,
  duration_ms: 1,
  at: Date.UTC(2026, 10, 22, 8, 0, n % 60),
});

describe('request journal', () => {
  it('keeps the last 1,000 requests of an account, newest first, once it has wrapped round', () => {
    const journal = new RequestJournal();
    for (let n = 0; n < 1005; n++) journal.record('acc_a', entry(n));
    journal.record('acc_b', entry(7));

    const all = journal.recent('acc_a', 5000);
    expect(all).toHaveLength(1000);
    expect(all[0]?.path).toBe('/v1/shipments/1004');
    expect(all[999]?.path).toBe('/v1/shipments/5');
    expect(all[0]?.at).toBe('2026-11-22T08:00:44Z');
    expect(journal.recent('acc_a', 2).map((e) => e.path)).toEqual([
      '/v1/shipments/1004',
      '/v1/shipments/1003',
    ]);
    expect(journal.recent('acc_b', 10).map((e) => e.path)).toEqual(['/v1/shipments/7']);
  });

  it('answers before it has wrapped, and forgets an account', () => {
    const journal = new RequestJournal();
    for (let n = 0; n < 3; n++) journal.record('acc_a', entry(n));
    expect(journal.recent('acc_a', 10).map((e) => e.path)).toEqual([
      '/v1/shipments/2',
      '/v1/shipments/1',
      '/v1/shipments/0',
    ]);
    journal.forget('acc_a');
    expect(journal.recent('acc_a', 10)).toEqual([]);
    expect(journal.recent('acc_unknown', 10)).toEqual([]);
  });
});
