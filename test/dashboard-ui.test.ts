import { describe, expect, it } from 'vitest';
import { Api, ApiFailure, describeFailure } from '../src/dashboard/ui/api.js';
import {
  durationValue,
  formatInstant,
  formatSpan,
  prettyBody,
  relativeTo,
} from '../src/dashboard/ui/format.js';
import { attemptOutcome } from '../src/dashboard/ui/outcome.js';
import { Poller } from '../src/dashboard/ui/poller.js';
import { hrefOf, parseRoute, type Route, sectionOf } from '../src/dashboard/ui/routes.js';
import {
  forgetKey,
  KEY_ENTRY,
  keyFromFragment,
  looksLikeKey,
  memoryStore,
  startingKey,
} from '../src/dashboard/ui/session.js';
import { voidRefusal } from '../src/dashboard/ui/voiding.js';

/** The dashboard's browser logic that is more than drawing: run here without a browser. */

const KEY = 'svc_test_0123456789abcdefghijklmn';

describe('the key', () => {
  it('comes out of the fragment, which keeps anything else it held', () => {
    expect(keyFromFragment(`#key=${KEY}`)).toEqual({ key: KEY, rest: '' });
    expect(keyFromFragment(`#key=${KEY}&view=compact`)).toEqual({ key: KEY, rest: '#view=compact' });
    expect(keyFromFragment('#/shipments/shp_1')).toEqual({ key: undefined, rest: '#/shipments/shp_1' });
    expect(keyFromFragment('')).toEqual({ key: undefined, rest: '' });
    expect(keyFromFragment('#key=')).toEqual({ key: undefined, rest: '' });
  });

  it('in the fragment wins over one kept from an earlier visit, and is kept; the address loses it', () => {
    const store = memoryStore();
    store.setItem(KEY_ENTRY, 'svc_test_an-older-key-of-another-account');
    const replaced: string[] = [];
    expect(startingKey({ hash: `#key=${KEY}` }, store, (rest) => replaced.push(rest))).toBe(KEY);
    expect(replaced).toEqual(['']);
    expect(store.getItem(KEY_ENTRY)).toBe(KEY);
  });

  it('kept from an earlier visit is used when the fragment has none, and forgotten on sign-out', () => {
    const store = memoryStore();
    const replaced: string[] = [];
    expect(startingKey({ hash: '#/clock' }, store, (rest) => replaced.push(rest))).toBeUndefined();
    store.setItem(KEY_ENTRY, KEY);
    expect(startingKey({ hash: '#/clock' }, store, (rest) => replaced.push(rest))).toBe(KEY);
    expect(replaced).toEqual([]);
    forgetKey(store);
    expect(store.getItem(KEY_ENTRY)).toBeNull();
  });

  it('must look like a test key before it is tried', () => {
    expect(looksLikeKey(KEY)).toBe(true);
    for (const value of [
      '',
      'svc_live_0123456789abcdef',
      'svc_test_',
      'svc_test_short',
      `${KEY} x`,
      'Bearer x',
    ]) {
      expect([value, looksLikeKey(value)]).toEqual([value, false]);
    }
  });
});

describe('the screens in the fragment', () => {
  it('round-trip through their links', () => {
    const routes: Route[] = [
      { screen: 'shipments' },
      { screen: 'shipment', id: 'shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2' },
      { screen: 'clock' },
      { screen: 'webhooks' },
      { screen: 'webhooks', id: 'wh_01JD3S5Z7QK2N8W4X6Y9A0B1C2' },
      { screen: 'outbox' },
      { screen: 'keys' },
      { screen: 'faults' },
      { screen: 'requests' },
      { screen: 'report' },
    ];
    for (const route of routes) expect(parseRoute(hrefOf(route))).toEqual(route);
  });

  it('fall back to the shipments for anything else, and never take a malformed id', () => {
    for (const hash of [
      '',
      '#',
      '#/',
      '#/nowhere',
      '#/shipments/<img>',
      '#/shipments/a/b',
      '#/shipments/%E0%A4%A',
    ]) {
      expect([hash, parseRoute(hash)]).toEqual([hash, { screen: 'shipments' }]);
    }
    expect(sectionOf({ screen: 'shipment', id: 'shp_1' })).toBe('shipments');
  });
});

describe('formatting', () => {
  it('writes instants and spans for people', () => {
    expect(formatInstant('2026-11-22T08:23:14Z')).toBe('2026-11-22 08:23:14 UTC');
    expect(formatInstant(null)).toBe('—');
    expect([45_000, 300_000, 9_000_000, 7_200_000, 273_600_000, 259_200_000].map(formatSpan)).toEqual([
      '45 s',
      '5 min',
      '2 h 30 min',
      '2 h',
      '3 d 4 h',
      '3 d',
    ]);
  });

  it('says how far an instant is from the account clock', () => {
    const now = '2026-11-22T08:00:00Z';
    expect(relativeTo('2026-11-22T08:05:00Z', now)).toBe('in 5 min');
    expect(relativeTo('2026-11-22T06:00:00Z', now)).toBe('2 h ago');
    expect(relativeTo(now, now)).toBe('now');
    expect(relativeTo(now, undefined)).toBe('');
  });

  it('sends a bare number of seconds as a number and anything else as the API reads it', () => {
    expect(durationValue(' 90 ')).toBe(90);
    expect(durationValue('2h')).toBe('2h');
    expect(durationValue('2 days')).toBe('2 days');
    expect(durationValue('   ')).toBeUndefined();
  });

  it('pretty-prints JSON bodies and leaves others as they are', () => {
    expect(prettyBody('{"a":1}')).toBe('{\n  "a": 1\n}');
    expect(prettyBody('receiver says 500')).toBe('receiver says 500');
    expect(prettyBody(null)).toBe('');
  });
});

describe('the API client', () => {
  const answer = (status: number, body: unknown, type = 'application/json') =>
    new Response(typeof body === 'string' ? body : JSON.stringify(body), {
      status,
      headers: { 'content-type': type },
    });

  it('sends the key as a Bearer token to the page folder, and JSON when there is a body', async () => {
    const sent: { url: string; init: RequestInit }[] = [];
    const api = new Api('http://127.0.0.1:4010/prefix/', KEY, undefined, async (url, init) => {
      sent.push({ url, init });
      return answer(200, { ok: true });
    });
    expect(await api.post('/_sandbox/clock', { frozen: true })).toEqual({ ok: true });
    expect(sent[0]?.url).toBe('http://127.0.0.1:4010/prefix/_sandbox/clock');
    expect(sent[0]?.init.headers).toEqual({
      authorization: `Bearer ${KEY}`,
      'content-type': 'application/json',
    });
    expect(sent[0]?.init.body).toBe('{"frozen":true}');
  });

  it("turns the contract's error body into a failure, and tells when the key is refused", async () => {
    const refused: ApiFailure[] = [];
    const api = new Api(
      'http://127.0.0.1:4010/',
      KEY,
      (failure) => refused.push(failure),
      async (url) =>
        url.endsWith('/account')
          ? answer(401, { error: { code: 'invalid_api_key', message: 'The key was revoked.' } })
          : answer(422, { error: { code: 'invalid_field', message: "'by' is wrong.", field: 'by' } }),
    );
    const failure = await api.post('/_sandbox/clock/advance', { by: 'x' }).catch((error) => error);
    expect(failure).toBeInstanceOf(ApiFailure);
    expect(describeFailure(failure)).toBe("'by' is wrong. (by) [422 invalid_field]");
    expect(refused).toEqual([]);
    await api.get('/_sandbox/account').catch(() => undefined);
    expect(refused.map((f) => f.code)).toEqual(['invalid_api_key']);
  });

  it('makes a failure of an answer that is not the contract’s body', async () => {
    const api = new Api('http://127.0.0.1:4010/', KEY, undefined, async () =>
      answer(502, '<html>Bad gateway</html>', 'text/html'),
    );
    const failure = (await api.get('/_sandbox/clock').catch((error) => error)) as ApiFailure;
    expect([failure.status, failure.code]).toEqual([502, 'unexpected_answer']);
  });
});

/** Lets every promise and immediate queued so far run. */
const settle = async () => {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('polling', () => {
  /** A poller on a hand-driven timer: `tick()` fires the pending timer, if any. */
  function harness(load: () => Promise<number>, hidden = { now: false }) {
    const results: unknown[] = [];
    let pending: (() => void) | undefined;
    const poller = new Poller<number>({
      load,
      onResult: (result) => results.push(result),
      everyMs: 2000,
      isHidden: () => hidden.now,
      setTimer: (run) => {
        pending = run;
        return run;
      },
      clearTimer: (timer) => {
        if (pending === timer) pending = undefined;
      },
    });
    return {
      poller,
      results,
      hasTimer: () => pending !== undefined,
      tick: async () => {
        const run = pending;
        pending = undefined;
        run?.();
        await new Promise((resolve) => setImmediate(resolve));
      },
    };
  }

  it('reads at once, then again after each answer, never two at once', async () => {
    let n = 0;
    let inFlight = 0;
    let most = 0;
    const h = harness(async () => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
      return ++n;
    });
    h.poller.start();
    // Asked again while the first read is under way: it waits for that one.
    void h.poller.refresh();
    await settle();
    expect(h.results).toEqual([{ data: 1 }, { data: 2 }]);
    await h.tick();
    await settle();
    expect(h.results).toEqual([{ data: 1 }, { data: 2 }, { data: 3 }]);
    expect(most).toBe(1);
    expect(h.hasTimer()).toBe(true);
  });

  it('reads once more after a refresh asked for during a read, so an action shows', async () => {
    let n = 0;
    let release: () => void = () => {};
    const h = harness(
      () =>
        new Promise<number>((resolve) => {
          n++;
          release = () => resolve(n);
        }),
    );
    h.poller.start();
    void h.poller.refresh();
    void h.poller.refresh();
    release();
    await new Promise((resolve) => setImmediate(resolve));
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.results).toEqual([{ data: 1 }, { data: 2 }]);
  });

  it('reports failures and goes on; stops for good when stopped', async () => {
    let fail = true;
    const h = harness(async () => {
      if (fail) throw new Error('sandbox down');
      return 7;
    });
    h.poller.start();
    await new Promise((resolve) => setImmediate(resolve));
    fail = false;
    await h.tick();
    expect(h.results).toEqual([{ error: new Error('sandbox down') }, { data: 7 }]);
    h.poller.stop();
    expect(h.hasTimer()).toBe(false);
    await h.poller.refresh();
    expect(h.results).toHaveLength(2);
  });

  it('waits while the page is hidden and reads as soon as it is shown', async () => {
    const hidden = { now: true };
    let n = 0;
    const h = harness(async () => ++n, hidden);
    h.poller.start();
    await new Promise((resolve) => setImmediate(resolve));
    expect([h.results.length, h.hasTimer()]).toEqual([1, false]);
    hidden.now = false;
    h.poller.visible();
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.results).toEqual([{ data: 1 }, { data: 2 }]);
    expect(h.hasTimer()).toBe(true);
  });
});

describe('voiding a label', () => {
  const label = { status: 'active' as const, created_at: '2026-11-01T10:00:00Z' };
  const labelled = { status: 'pre_transit' as const, occurred_at: '2026-11-01T10:00:00Z' };

  it('is offered for an active label not yet scanned, within 30 days of its creation', () => {
    expect(voidRefusal(label, [labelled], '2026-11-01T10:00:00Z')).toBeUndefined();
    expect(voidRefusal(label, [], '2026-12-01T10:00:00Z')).toBeUndefined();
    // A second pre_transit event is no scan.
    expect(voidRefusal(label, [labelled, labelled], '2026-11-20T00:00:00Z')).toBeUndefined();
  });

  it('is refused once the tracking left pre_transit, naming the first scan, even if it came back', () => {
    const events = [
      { status: 'pre_transit' as const, occurred_at: '2026-11-03T09:00:00Z' },
      { status: 'exception' as const, occurred_at: '2026-11-02T09:00:00Z' },
      { status: 'accepted' as const, occurred_at: '2026-11-01T12:00:00Z' },
      labelled,
    ];
    expect(voidRefusal(label, events, '2026-11-04T00:00:00Z')).toBe(
      'The carrier scanned the parcel at 2026-11-01 12:00:00 UTC: a scanned label cannot be voided.',
    );
  });

  it('is refused a second after the 30 days, and for a label already voided', () => {
    expect(voidRefusal(label, [labelled], '2026-12-01T10:00:01Z')).toBe(
      'The 30 days in which a label can be voided ended at 2026-12-01 10:00:00 UTC.',
    );
    expect(voidRefusal({ ...label, status: 'voided' }, [labelled], '2026-11-02T00:00:00Z')).toBe(
      'The label is voided.',
    );
  });
});

describe("a delivery attempt's outcome", () => {
  const attempt = (status: 'succeeded' | 'failed' | 'scheduled', extra = {}) => ({
    status,
    probe_signature: null,
    error: null,
    ...extra,
  });

  it('is its status, for a delivery and for a genuine probe', () => {
    expect(attemptOutcome(attempt('succeeded'))).toEqual({ words: 'succeeded', tone: 'succeeded' });
    expect(attemptOutcome(attempt('failed', { error: 'http' }))).toEqual({ words: 'failed', tone: 'failed' });
    expect(attemptOutcome(attempt('failed', { error: 'http', probe_signature: 'genuine' }))).toEqual({
      words: 'failed',
      tone: 'failed',
    });
  });

  it('is judged the other way round for a forged probe: refused passes, accepted fails, silence tells nothing', () => {
    const forged = { probe_signature: 'forged' };
    expect(attemptOutcome(attempt('failed', { ...forged, error: 'http' }))).toEqual({
      words: 'pass (refused)',
      tone: 'pass',
    });
    expect(attemptOutcome(attempt('succeeded', forged))).toEqual({ words: 'fail (accepted)', tone: 'fail' });
    for (const error of ['timeout', 'connection', 'destination_not_allowed']) {
      expect(attemptOutcome(attempt('failed', { ...forged, error }))).toEqual({
        words: 'no answer',
        tone: 'not_observed',
      });
    }
    expect(attemptOutcome(attempt('scheduled', forged))).toEqual({ words: 'scheduled', tone: 'scheduled' });
  });
});
