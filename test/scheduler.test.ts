import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import { AccountService } from '../src/accounts/service.js';
import { AccountStore } from '../src/accounts/store.js';
import { testConfig } from '../src/config/index.js';
import { chainedId } from '../src/core/ids.js';
import { DAY, formatTimestamp, HOUR, MINUTE } from '../src/core/time.js';
import type { Db } from '../src/db/database.js';
import { loadScenarios, scenarioDirectories } from '../src/scenarios/files.js';
import { FINISHED_JOB_RETENTION_MS } from '../src/scheduler/purge.js';
import type { Job, JobOutcome } from '../src/scheduler/queue.js';
import { Scheduler } from '../src/scheduler/scheduler.js';
import { createSandbox, type Sandbox } from '../src/wiring.js';
import { capturingLogger, openMigratedDatabase } from './helpers.js';

const T0 = Date.UTC(2026, 10, 22, 8, 0, 0);
const ACCOUNT = DEFAULT_ACCOUNT.id;
const KIND = 'test.job';

/** A scheduler over a fresh database (`:memory:` unless a file is given) with the default account and a second one. */
function setup(location = ':memory:') {
  const db = openMigratedDatabase(location);
  const accounts = new AccountStore(db);
  const wall = { now: T0 };
  const { logger, lines } = capturingLogger();
  const service = new AccountService({
    store: accounts,
    clockSpeed: 1,
    serverRetryLadder: [],
    serverEnforcesRateLimits: true,
    offersDefaultAccount: true,
    checkScenario: () => {},
    realNow: () => T0,
    logger,
  });
  service.seedDefaultAccount();
  const other = service.createAccount({}).account.id;
  const scheduler = new Scheduler(
    db,
    (id) => accounts.find(id)?.clock,
    logger,
    () => wall.now,
  );
  /** What the handlers saw, in the order they ran. */
  const seen: { subject: string; dueAt: number; accountId: string }[] = [];
  scheduler.register<{ note?: string }>(KIND, (job) => {
    seen.push({ subject: job.subject, dueAt: job.dueAt, accountId: job.accountId });
    return { note: job.payload.note ?? job.subject };
  });
  const schedule = (subject: string, dueAt: number, options: { accountId?: string; kind?: string } = {}) =>
    scheduler.schedule({
      accountId: options.accountId ?? ACCOUNT,
      kind: options.kind ?? KIND,
      subject,
      payload: {},
      dueAt,
      now: T0,
    });
  const stateOf = (id: string) =>
    (
      db.prepare('SELECT state, error FROM jobs WHERE id = ?').get(id) as {
        state: string;
        error: string | null;
      }
    ).state;
  return { db, accounts, wall, other, scheduler, seen, schedule, stateOf, logLines: lines };
}

describe('Scheduler.runDue', () => {
  it('runs due jobs in time order, each with its own due time, and leaves later ones pending', async () => {
    const { scheduler, seen, schedule, stateOf } = setup();
    const late = schedule('late', T0 + 5 * HOUR);
    schedule('third', T0 + 3 * HOUR);
    schedule('first', T0 + HOUR);
    schedule('second-a', T0 + 2 * HOUR);
    schedule('second-b', T0 + 2 * HOUR);
    const edge = schedule('edge', T0 + 4 * HOUR);

    const ran = await scheduler.runDue(ACCOUNT, T0 + 4 * HOUR);

    expect(seen.map((job) => [job.subject, job.dueAt])).toEqual([
      ['first', T0 + HOUR],
      ['second-a', T0 + 2 * HOUR],
      ['second-b', T0 + 2 * HOUR],
      ['third', T0 + 3 * HOUR],
      ['edge', T0 + 4 * HOUR],
    ]);
    expect(ran.map((job) => [job.subject, job.due_at, job.kind, job.note])).toEqual([
      ['first', '2026-11-22T09:00:00Z', KIND, 'first'],
      ['second-a', '2026-11-22T10:00:00Z', KIND, 'second-a'],
      ['second-b', '2026-11-22T10:00:00Z', KIND, 'second-b'],
      ['third', '2026-11-22T11:00:00Z', KIND, 'third'],
      ['edge', '2026-11-22T12:00:00Z', KIND, 'edge'],
    ]);
    expect(ran.at(-1)?.id).toBe(edge);
    expect(stateOf(edge)).toBe('done');
    expect(stateOf(late)).toBe('pending');
    expect(scheduler.pending(KIND, 'late').map((job) => job.dueAt)).toEqual([T0 + 5 * HOUR]);

    // Nothing runs twice; the late job runs once its time comes.
    expect(await scheduler.runDue(ACCOUNT, T0 + 4 * HOUR)).toEqual([]);
    expect((await scheduler.runDue(ACCOUNT, T0 + 5 * HOUR)).map((job) => job.subject)).toEqual(['late']);
    expect(seen).toHaveLength(6);
  });

  it('also runs the jobs that handlers schedule within the range, in time order', async () => {
    const { scheduler, seen, schedule } = setup();
    scheduler.register<{ children: number[] }>('chain', (job) => {
      seen.push({ subject: job.subject, dueAt: job.dueAt, accountId: job.accountId });
      for (const [i, at] of job.payload.children.entries()) {
        scheduler.schedule({
          accountId: job.accountId,
          kind: KIND,
          subject: `${job.subject}.${i}`,
          payload: {},
          dueAt: at,
          now: job.dueAt,
        });
      }
      return undefined;
    });
    scheduler.schedule({
      accountId: ACCOUNT,
      kind: 'chain',
      subject: 'parent',
      payload: { children: [T0 + 90 * MINUTE, T0 + 2 * HOUR, T0 + 10 * HOUR] },
      dueAt: T0 + HOUR,
      now: T0,
    });
    schedule('sibling', T0 + 100 * MINUTE);

    const ran = await scheduler.runDue(ACCOUNT, T0 + 3 * HOUR);
    expect(ran.map((job) => job.subject)).toEqual(['parent', 'parent.0', 'sibling', 'parent.1']);
    expect(seen.map((job) => job.dueAt)).toEqual([
      T0 + HOUR,
      T0 + 90 * MINUTE,
      T0 + 100 * MINUTE,
      T0 + 2 * HOUR,
    ]);
    expect(scheduler.pending(KIND, 'parent.2')).toHaveLength(1);
  });

  it('runs `afterwards` once every due job has run', async () => {
    const { scheduler, seen, schedule } = setup();
    schedule('a', T0 + HOUR);
    schedule('b', T0 + 2 * HOUR);
    let seenAfterwards = -1;
    await scheduler.runDue(ACCOUNT, T0 + 2 * HOUR, {
      afterwards: () => {
        seenAfterwards = seen.length;
      },
    });
    expect(seenAfterwards).toBe(2);
  });

  it('drops cancelled jobs: by kind and subject, or one by id', async () => {
    const { scheduler, seen, schedule, stateOf } = setup();
    const a1 = schedule('a', T0 + HOUR);
    const a2 = schedule('a', T0 + 2 * HOUR);
    const otherKind = schedule('a', T0 + HOUR, { kind: 'other.kind' });
    schedule('b', T0 + HOUR);
    const c1 = schedule('c', T0 + HOUR);
    const c2 = schedule('c', T0 + 2 * HOUR);
    scheduler.register('other.kind', () => ({ other: true }));

    scheduler.cancel(KIND, 'a', T0);
    scheduler.cancelJob(c1, T0);
    expect(scheduler.pending(KIND, 'a')).toEqual([]);
    expect(scheduler.pending(KIND, 'c').map((job) => job.id)).toEqual([c2]);
    expect(scheduler.pending('other.kind', 'a').map((job) => job.id)).toEqual([otherKind]);

    const ran = await scheduler.runDue(ACCOUNT, T0 + 3 * HOUR);
    expect(ran.map((job) => [job.kind, job.subject])).toEqual([
      ['other.kind', 'a'],
      [KIND, 'b'],
      [KIND, 'c'],
    ]);
    expect(seen.map((job) => job.subject)).toEqual(['b', 'c']);
    expect([a1, a2, c1].map(stateOf)).toEqual(['cancelled', 'cancelled', 'cancelled']);

    // Cancelling finished work changes nothing.
    scheduler.cancel(KIND, 'c', T0);
    scheduler.cancelJob(otherKind, T0);
    expect([c2, otherKind].map(stateOf)).toEqual(['done', 'done']);
  });

  it('marks a failing job failed, logs it, and still runs the others', async () => {
    const { scheduler, seen, schedule, stateOf, db, logLines } = setup();
    scheduler.register('throws', () => {
      throw new Error('boom');
    });
    scheduler.register('rejects', async () => {
      await Promise.resolve();
      throw new Error('async boom');
    });
    const before = schedule('before', T0 + HOUR);
    const thrown = schedule('x', T0 + 2 * HOUR, { kind: 'throws' });
    const rejected = schedule('y', T0 + 3 * HOUR, { kind: 'rejects' });
    const orphan = schedule('z', T0 + 4 * HOUR, { kind: 'nobody.handles.this' });
    const after = schedule('after', T0 + 5 * HOUR);

    const ran = await scheduler.runDue(ACCOUNT, T0 + 5 * HOUR);
    expect(ran.map((job) => [job.subject, job.error])).toEqual([
      ['before', undefined],
      ['x', 'boom'],
      ['y', 'async boom'],
      ['z', 'no handler'],
      ['after', undefined],
    ]);
    expect(seen.map((job) => job.subject)).toEqual(['before', 'after']);
    expect([before, thrown, rejected, orphan, after].map(stateOf)).toEqual([
      'done',
      'failed',
      'failed',
      'failed',
      'done',
    ]);
    const row = db.prepare('SELECT error, finished_at FROM jobs WHERE id = ?').get(thrown) as {
      error: string;
      finished_at: number;
    };
    expect(row).toEqual({ error: 'Error: boom', finished_at: T0 + 2 * HOUR });
    expect(logLines.filter((line) => line.msg === 'job failed')).toHaveLength(2);
    // A failed job is not retried by a later run.
    expect(await scheduler.runDue(ACCOUNT, T0 + 6 * HOUR)).toEqual([]);
  });

  it('keeps accounts apart: running one account runs none of the other', async () => {
    const { scheduler, seen, schedule, other } = setup();
    schedule('mine', T0 + HOUR);
    schedule('theirs', T0 + HOUR, { accountId: other });
    schedule('theirs-too', T0 + 30 * MINUTE, { accountId: other });

    expect((await scheduler.runDue(ACCOUNT, T0 + 10 * HOUR)).map((job) => job.subject)).toEqual(['mine']);
    expect(seen.map((job) => job.accountId)).toEqual([ACCOUNT]);
    expect(scheduler.pending(KIND, 'theirs')).toHaveLength(1);

    const theirs = await scheduler.runDue(other, T0 + 10 * HOUR);
    expect(theirs.map((job) => job.subject)).toEqual(['theirs-too', 'theirs']);
    expect(seen.slice(1).map((job) => job.accountId)).toEqual([other, other]);
  });

  it("serialises an account's runs: two overlapping runs never interleave or repeat a job", async () => {
    const { scheduler, db, accounts, other } = setup();
    const trace: string[] = [];
    const slow = new Scheduler(
      db,
      (id) => accounts.find(id)?.clock,
      capturingLogger().logger,
      () => T0,
    );
    slow.register(KIND, async (job: Job) => {
      trace.push(`start ${job.subject}`);
      await new Promise((resolve) => setImmediate(resolve));
      trace.push(`end ${job.subject}`);
      return undefined;
    });
    for (const [subject, at] of [
      ['a', T0 + HOUR],
      ['b', T0 + 2 * HOUR],
      ['c', T0 + 3 * HOUR],
    ] as const) {
      slow.schedule({ accountId: ACCOUNT, kind: KIND, subject, payload: {}, dueAt: at, now: T0 });
    }
    slow.schedule({ accountId: other, kind: KIND, subject: 'o', payload: {}, dueAt: T0, now: T0 });

    const [first, second, third] = await Promise.all([
      slow.runDue(ACCOUNT, T0 + 2 * HOUR),
      slow.runDue(ACCOUNT, T0 + 3 * HOUR),
      slow.runDue(other, T0),
    ]);
    expect(first.map((job) => job.subject)).toEqual(['a', 'b']);
    expect(second.map((job) => job.subject)).toEqual(['c']);
    expect(third.map((job) => job.subject)).toEqual(['o']);
    const mine = trace.filter((line) => !line.endsWith(' o'));
    expect(mine).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
    // The other account did not wait for this one: it started before this one's first job ended.
    expect(trace.indexOf('start o')).toBeLessThan(trace.indexOf('end a'));
    expect(scheduler.pending(KIND, 'a')).toEqual([]);
  });
});

describe('advanceClock', () => {
  /** A state over `:memory:` with the default account's clock frozen at T0 and a job handler. */
  function stateWithJobs() {
    const wall = { now: T0 };
    const config = testConfig();
    const state = createSandbox({
      db: openMigratedDatabase(':memory:'),
      config,
      logger: capturingLogger().logger,
      scenarios: loadScenarios(scenarioDirectories(undefined)),
      realNow: () => wall.now,
    });
    state.services.clock.set(ACCOUNT, { frozen: true });
    const seen: number[] = [];
    state.scheduler.register(KIND, (job) => {
      seen.push(job.dueAt);
      return undefined;
    });
    for (const at of [T0 + HOUR, T0 + 2 * HOUR, T0 + 3 * HOUR]) {
      state.scheduler.schedule({
        accountId: ACCOUNT,
        kind: KIND,
        subject: 's',
        payload: {},
        dueAt: at,
        now: T0,
      });
    }
    return { state, seen };
  }

  it('moves the clock and answers once every job due on the way has run', async () => {
    const { state, seen } = stateWithJobs();
    const answer = await state.services.clock.advance(ACCOUNT, { by: '2h' });
    expect(seen).toEqual([T0 + HOUR, T0 + 2 * HOUR]);
    expect(answer.now).toBe('2026-11-22T10:00:00Z');
    expect(answer.ran.map((job) => job.due_at)).toEqual(['2026-11-22T09:00:00Z', '2026-11-22T10:00:00Z']);
  });

  it('never moves the clock backwards when two advances overlap', async () => {
    const { state, seen } = stateWithJobs();
    // Both read the clock at 08:00; the longer one gets the account's turn first.
    const [long, short] = await Promise.all([
      state.services.clock.advance(ACCOUNT, { by: '2h' }),
      state.services.clock.advance(ACCOUNT, { to: '2026-11-22T09:00:00Z' }),
    ]);
    expect(long.now).toBe('2026-11-22T10:00:00Z');
    expect(short).toMatchObject({ now: '2026-11-22T10:00:00Z', ran: [] });
    expect(formatTimestamp(state.stores.accounts.find(ACCOUNT)!.clock.anchorVirtual)).toBe(
      '2026-11-22T10:00:00Z',
    );
    expect(seen).toEqual([T0 + HOUR, T0 + 2 * HOUR]);
    const next = await state.services.clock.advance(ACCOUNT, { by: '1h' });
    expect(next.now).toBe('2026-11-22T11:00:00Z');
    expect(seen).toEqual([T0 + HOUR, T0 + 2 * HOUR, T0 + 3 * HOUR]);
  });
});

describe('the durable scheduler across a restart', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  function openState(file: string, wall: { now: number }) {
    const config = testConfig();
    const db = openMigratedDatabase(file);
    const state = createSandbox({
      db,
      config,
      logger: capturingLogger().logger,
      scenarios: loadScenarios(scenarioDirectories(undefined)),
      realNow: () => wall.now,
    });
    const seen: { subject: string; dueAt: number }[] = [];
    state.scheduler.register(KIND, (job) => {
      seen.push({ subject: job.subject, dueAt: job.dueAt });
      return undefined;
    });
    return { db, state, seen };
  }

  const jobStates = (db: Db) =>
    Object.fromEntries(
      (
        db.prepare('SELECT subject, state FROM jobs ORDER BY seq').all() as {
          subject: string;
          state: string;
        }[]
      ).map((row) => [row.subject, row.state]),
    );

  it('keeps jobs in the file and runs the overdue ones, a crashed one included, at start', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sandbox-scheduler-'));
    dirs.push(dir);
    const file = path.join(dir, 'sandbox.db');
    const wall = { now: T0 };

    const first = openState(file, wall);
    const schedule = (state: Sandbox, subject: string, dueAt: number) =>
      state.scheduler.schedule({ accountId: ACCOUNT, kind: KIND, subject, payload: {}, dueAt, now: T0 });
    schedule(first.state, 'crashed', T0 + HOUR);
    schedule(first.state, 'overdue', T0 + 2 * HOUR);
    schedule(first.state, 'future', T0 + 5 * HOUR);
    // The process dies while the first job is running.
    first.db.prepare("UPDATE jobs SET state = 'running' WHERE subject = 'crashed'").run();
    first.db.close();

    // Three hours of real time pass while the sandbox is down; the account's clock runs at speed 1.
    wall.now += 3 * HOUR;
    const second = openState(file, wall);
    expect(jobStates(second.db)).toEqual({ crashed: 'running', overdue: 'pending', future: 'pending' });
    await second.state.scheduler.start();
    try {
      expect(second.seen).toEqual([
        { subject: 'crashed', dueAt: T0 + HOUR },
        { subject: 'overdue', dueAt: T0 + 2 * HOUR },
      ]);
      expect(jobStates(second.db)).toEqual({ crashed: 'done', overdue: 'done', future: 'pending' });
    } finally {
      await second.state.scheduler.stop();
      second.db.close();
    }
  });
});

describe('the background timer', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Fake timers only: the scheduler's sleeps are simulated, `wall.now` is moved by hand alongside. */
  async function passRealTime(wall: { now: number }, ms: number) {
    wall.now += ms;
    await vi.advanceTimersByTimeAsync(ms);
  }

  it('runs jobs when a running clock reaches them, at any speed', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { scheduler, accounts, seen, schedule, wall } = setup();
    accounts.saveClock(ACCOUNT, { anchorReal: T0, anchorVirtual: T0, speed: 3600, frozen: false });
    schedule('half-hour', T0 + 30 * MINUTE);
    schedule('two-hours', T0 + 2 * HOUR);

    await scheduler.start();
    expect(seen).toEqual([]);
    // At 3600x, half an hour of virtual time is 500 ms of real time.
    await passRealTime(wall, 499);
    expect(seen).toEqual([]);
    await passRealTime(wall, 1);
    expect(seen.map((job) => job.subject)).toEqual(['half-hour']);
    await passRealTime(wall, 1500);
    expect(seen.map((job) => [job.subject, job.dueAt])).toEqual([
      ['half-hour', T0 + 30 * MINUTE],
      ['two-hours', T0 + 2 * HOUR],
    ]);
    await scheduler.stop();
  });

  it('waits while the clock is frozen and resumes from where it stood once unfrozen', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { scheduler, accounts, seen, schedule, wall } = setup();
    accounts.saveClock(ACCOUNT, { anchorReal: T0, anchorVirtual: T0, speed: 3600, frozen: true });
    schedule('in-an-hour', T0 + HOUR);

    await scheduler.start();
    // Running, the clock would have passed the job 29 hours ago.
    await passRealTime(wall, 30_000);
    expect(seen).toEqual([]);

    // Unfrozen at virtual T0: an hour at 3600x is a second of real time from here.
    const clock = accounts.find(ACCOUNT)!.clock;
    accounts.saveClock(ACCOUNT, { ...clock, anchorReal: wall.now, frozen: false });
    scheduler.wake();
    await passRealTime(wall, 999);
    expect(seen).toEqual([]);
    await passRealTime(wall, 1);
    expect(seen).toEqual([{ subject: 'in-an-hour', dueAt: T0 + HOUR, accountId: ACCOUNT }]);

    // A job scheduled while running, already due, runs without waiting for the next poll.
    schedule('now', T0);
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.map((job) => job.subject)).toEqual(['in-an-hour', 'now']);
    await scheduler.stop();
  });

  it('stops: nothing runs after stop()', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { scheduler, seen, schedule, wall } = setup();
    schedule('later', T0 + HOUR);
    await scheduler.start();
    await scheduler.stop();
    await passRealTime(wall, 2 * HOUR);
    expect(seen).toEqual([]);
    expect(scheduler.pending(KIND, 'later')).toHaveLength(1);
  });
});

describe('finished jobs', () => {
  const ids = (db: Db) => db.prepare('SELECT id FROM jobs ORDER BY seq').pluck().all();

  it('are deleted a day after they finished on their account clock; pending ones never are', async () => {
    expect(FINISHED_JOB_RETENTION_MS).toBe(DAY);
    const { db, scheduler, schedule, stateOf, other } = setup();
    scheduler.register('throws', () => {
      throw new Error('boom');
    });
    const done = schedule('done', T0 + HOUR);
    const failed = schedule('failed', T0 + 2 * HOUR, { kind: 'throws' });
    const cancelled = schedule('cancelled', T0 + 3 * HOUR);
    scheduler.cancelJob(cancelled, T0 + 30 * MINUTE);
    const pending = schedule('pending', T0 + 10 * DAY);
    const theirs = schedule('theirs', T0 + HOUR, { accountId: other });
    await scheduler.runDue(other, T0 + HOUR);

    await scheduler.runDue(ACCOUNT, T0 + 2 * HOUR);
    expect([done, failed, cancelled, pending].map(stateOf)).toEqual([
      'done',
      'failed',
      'cancelled',
      'pending',
    ]);

    // Kept for a day after they finished: the cancelled one (30 min), then the done one (1 h).
    await scheduler.runDue(ACCOUNT, T0 + 30 * MINUTE + DAY);
    expect(ids(db)).toEqual([done, failed, cancelled, pending, theirs]);
    await scheduler.runDue(ACCOUNT, T0 + 30 * MINUTE + DAY + 1);
    expect(ids(db)).toEqual([done, failed, pending, theirs]);
    await scheduler.runDue(ACCOUNT, T0 + 2 * HOUR + DAY + 1);
    // The other account's jobs wait for its own clock.
    expect(ids(db)).toEqual([pending, theirs]);

    expect(scheduler.purgeFinished(other, T0 + HOUR + DAY + 1)).toBe(1);
    // Running the pending one later finishes it; a day after that it goes too.
    await scheduler.runDue(ACCOUNT, T0 + 10 * DAY);
    expect(stateOf(pending)).toBe('done');
    await scheduler.runDue(ACCOUNT, T0 + 11 * DAY + 1);
    expect(ids(db)).toEqual([]);
  });

  it('of accounts with no work left are deleted when the scheduler starts', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const { db, scheduler, schedule, wall, other } = setup();
      const mine = schedule('mine', T0 + HOUR);
      const theirs = schedule('theirs', T0 + HOUR, { accountId: other });
      await scheduler.runDue(ACCOUNT, T0 + HOUR);
      await scheduler.runDue(other, T0 + HOUR);
      expect(ids(db)).toEqual([mine, theirs]);

      // Both clocks run at real speed: two days later, the finished jobs are past the retention.
      wall.now = T0 + 2 * DAY;
      await scheduler.start();
      expect(ids(db)).toEqual([]);
      await scheduler.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('work that fails for a passing reason', () => {
  const dirs: string[] = [];
  afterEach(() => {
    vi.useRealTimers();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** The scheduler over a database file, its timers simulated; `wall.now` is moved with them. */
  function onFile() {
    const dir = mkdtempSync(path.join(tmpdir(), 'sandbox-scheduler-'));
    dirs.push(dir);
    const file = path.join(dir, 'sandbox.db');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    return { file, ...setup(file) };
  }

  async function passRealTime(wall: { now: number }, ms: number) {
    for (let passed = 0; passed < ms; passed += 1000) {
      wall.now += 1000;
      await vi.advanceTimersByTimeAsync(1000);
    }
  }

  // What was logged, but the line each step that ran writes.
  const messages = (lines: Record<string, unknown>[]) =>
    lines.map((line) => line.msg).filter((message) => message !== 'step');

  it('backs off while the disk is full instead of spinning, says so once, and runs the job once there is room', async () => {
    const { db, scheduler, schedule, stateOf, wall, logLines } = onFile();
    let tries = 0;
    scheduler.register('writes.a.lot', (job) => {
      tries += 1;
      // More than the free space of any page: the database has to grow to hold it.
      scheduler.schedule({
        accountId: job.accountId,
        kind: KIND,
        subject: 'big',
        payload: { text: 'x'.repeat(64 * 1024) },
        dueAt: job.dueAt + DAY,
        now: job.dueAt,
      });
      return undefined;
    });
    const job = schedule('grows', T0 + MINUTE, { kind: 'writes.a.lot' });
    await scheduler.start();

    // The database may not grow by one more page: SQLite answers SQLITE_FULL, as on a full disk.
    db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true })}`);
    await passRealTime(wall, MINUTE);
    expect(tries).toBe(1);
    await passRealTime(wall, MINUTE);
    // Tried at 0, 1, 3, 7, 15 and 31 seconds (the wait doubling from 1 s up to 30 s): a handful of
    // tries in a minute, where a spinning scheduler makes thousands.
    expect(tries).toBeGreaterThanOrEqual(5);
    expect(tries).toBeLessThanOrEqual(7);
    expect(stateOf(job)).toBe('pending');
    expect(messages(logLines)).toEqual([
      'background work is backing off: the disk is full; it resumes by itself once writing works again',
    ]);
    expect(logLines[0]).toMatchObject({ level: 40, code: 'SQLITE_FULL' });

    // Space is freed: the next try, at most 30 s later, succeeds, without a restart.
    const triesWhileFull = tries;
    db.pragma('max_page_count = 1000000000');
    await passRealTime(wall, 30_000);
    expect(stateOf(job)).toBe('done');
    expect(tries).toBe(triesWhileFull + 1);
    expect(scheduler.pending(KIND, 'big')).toHaveLength(1);
    expect(messages(logLines)).toEqual([
      'background work is backing off: the disk is full; it resumes by itself once writing works again',
      'background work resumed: writing works again',
    ]);
    await scheduler.stop();
  });

  it('runs a job that failed because the database was busy again later, and marks a job with a bug failed', async () => {
    const { db, file, scheduler, schedule, stateOf, wall, logLines, other } = onFile();
    // Fail at once when another connection holds the write lock, rather than wait 5 s for it.
    db.pragma('busy_timeout = 0');
    const seen: string[] = [];
    scheduler.register('writes', (job) => {
      seen.push(job.subject);
      scheduler.schedule({
        accountId: job.accountId,
        kind: KIND,
        subject: 'next',
        payload: {},
        dueAt: job.dueAt + DAY,
        now: job.dueAt,
      });
      return { wrote: true };
    });
    scheduler.register('buggy', (job) => {
      seen.push(job.subject);
      return (undefined as unknown as { oops(): JobOutcome }).oops();
    });
    const writes = schedule('writes', T0 + MINUTE, { kind: 'writes' });
    const buggy = schedule('buggy', T0 + MINUTE, { kind: 'buggy', accountId: other });
    await scheduler.start();

    // Another connection holds the database's write lock: every write here is SQLITE_BUSY.
    const blocker = new Database(file);
    blocker.exec('BEGIN IMMEDIATE');
    try {
      await passRealTime(wall, 2 * MINUTE);
      expect(seen.filter((subject) => subject === 'writes').length).toBeGreaterThanOrEqual(2);
      expect(seen.filter((subject) => subject === 'writes').length).toBeLessThanOrEqual(10);
      // Neither could be written: the job is pending, and so is the buggy one (its `failed` too is a write).
      expect([writes, buggy].map(stateOf)).toEqual(['pending', 'pending']);
      expect(messages(logLines)).toEqual([
        'background work is backing off: the database is busy; it resumes by itself once writing works again',
      ]);
    } finally {
      blocker.exec('ROLLBACK');
      blocker.close();
    }

    await passRealTime(wall, 30_000);
    expect([writes, buggy].map(stateOf)).toEqual(['done', 'failed']);
    expect(scheduler.pending(KIND, 'next')).toHaveLength(1);
    const failed = db.prepare('SELECT error FROM jobs WHERE id = ?').pluck().get(buggy);
    expect(failed).toMatch(/^TypeError: /);
    // The bug is logged once, when its job was marked failed; a failed job is not run again.
    const runsOfBuggy = seen.filter((subject) => subject === 'buggy').length;
    await passRealTime(wall, MINUTE);
    expect(seen.filter((subject) => subject === 'buggy')).toHaveLength(runsOfBuggy);
    expect(messages(logLines).filter((message) => message === 'job failed')).toHaveLength(1);
    expect(messages(logLines)).toContain('background work resumed: writing works again');
    await scheduler.stop();
  });
});

describe('chains', () => {
  const LINK = 'test.link';

  /**
   * Chains of links `step` apart: each link, when it runs, adds the next until `length` have run.
   * Its pending link stands for every link still to come.
   */
  function chained(scheduler: Scheduler, seen: string[]) {
    type Link = { index: number; length: number; start: number; step: number };
    const dueAt = (link: Link, index: number) => link.start + index * link.step;
    scheduler.register<Link>(LINK, {
      run: (job) => {
        seen.push(`${job.subject}${job.payload.index}`);
        const next = job.payload.index + 1;
        if (next < job.payload.length) {
          scheduler.continueChain(job, 1, {
            payload: { ...job.payload, index: next },
            dueAt: dueAt(job.payload, next),
            now: job.payload.start,
          });
        }
        return { index: job.payload.index };
      },
      upcoming: (job) =>
        Array.from({ length: job.payload.length - job.payload.index }, (_, ahead) => ({
          ahead,
          dueAt: dueAt(job.payload, job.payload.index + ahead),
          detail: { index: job.payload.index + ahead },
        })),
    });
    return (subject: string, start: number, length: number, step = HOUR) =>
      scheduler.startChain(
        {
          accountId: ACCOUNT,
          kind: LINK,
          subject,
          payload: { index: 0, length, start, step },
          dueAt: start,
          now: T0,
        },
        length,
      );
  }

  it('keeps one job a chain, and runs its links in the places they would have had if all were added at once', async () => {
    const { scheduler, schedule, db } = setup();
    const seen: string[] = [];
    const start = chained(scheduler, seen);
    const first = start('a', T0 + HOUR, 3);
    // Added after the chain started, due with its second and third links: those run first, as jobs
    // added before it would; `early` runs before them by its time.
    schedule('early', T0 + 90 * MINUTE);
    schedule('late', T0 + 2 * HOUR);
    schedule('later', T0 + 3 * HOUR);
    const count = () =>
      db.prepare("SELECT count(*) FROM jobs WHERE state = 'pending' AND subject = 'a'").pluck().get();
    expect(count()).toBe(1);

    const due = scheduler.upcoming(ACCOUNT, 10);
    expect(due.map((item) => [item.subject, item.dueAt - T0, item.detail])).toEqual([
      ['a', HOUR, { index: 0 }],
      ['early', 90 * MINUTE, {}],
      ['a', 2 * HOUR, { index: 1 }],
      ['late', 2 * HOUR, {}],
      ['a', 3 * HOUR, { index: 2 }],
      ['later', 3 * HOUR, {}],
    ]);
    expect(scheduler.upcoming(ACCOUNT, 3)).toEqual(due.slice(0, 3));

    const ran = await scheduler.runDue(ACCOUNT, T0 + 2 * HOUR);
    expect(ran.map((job) => job.subject)).toEqual(['a', 'early', 'a', 'late']);
    expect(count()).toBe(1);
    const rest = await scheduler.runDue(ACCOUNT, T0 + 5 * HOUR);
    expect(rest.map((job) => job.subject)).toEqual(['a', 'later']);
    expect(seen).toEqual(['a0', 'a1', 'a2']);
    expect(count()).toBe(0);

    // Each link ran under the identifier the list gave it, the first's counted on.
    const links = [...ran, ...rest].filter((job) => job.subject === 'a');
    expect(links.map((job) => job.id)).toEqual([first.id, chainedId(first.id, 1), chainedId(first.id, 2)]);
    expect(due.filter((item) => item.subject === 'a').map((item) => item.id)).toEqual(
      links.map((job) => job.id),
    );
  });

  it('keeps the places of two chains started one after the other, whichever runs first', async () => {
    const { scheduler } = setup();
    const seen: string[] = [];
    const start = chained(scheduler, seen);
    // b's first link runs before a's; their second links are due together, and a's was planned first.
    start('a', T0 + 2 * HOUR, 2);
    start('b', T0 + HOUR, 2, 2 * HOUR);
    await scheduler.runDue(ACCOUNT, T0 + 3 * HOUR);
    expect(seen).toEqual(['b0', 'a0', 'a1', 'b1']);
  });

  it('can skip links: a link further on takes its own place and identifier', async () => {
    const { scheduler, db } = setup();
    const seen: string[] = [];
    const start = chained(scheduler, seen);
    const first = start('a', T0 + HOUR, 4);
    scheduler.cancelJob(first.id, T0);
    const third = scheduler.continueChain(first, 2, {
      payload: { index: 2, length: 4, start: T0 + HOUR, step: HOUR },
      dueAt: T0 + 3 * HOUR,
      now: T0,
    });
    expect(third).toMatchObject({ id: chainedId(first.id, 2), seq: first.seq + 2 });
    expect(
      db
        .prepare('SELECT id FROM jobs WHERE seq = ?')
        .pluck()
        .get(first.seq + 2),
    ).toBe(third.id);
    const ran = await scheduler.runDue(ACCOUNT, T0 + 10 * HOUR);
    expect(seen).toEqual(['a2', 'a3']);
    expect(ran.map((job) => job.id)).toEqual([chainedId(first.id, 2), chainedId(first.id, 3)]);
  });

  it("counts identifiers on in the ULID's random part, carrying, and leaves the time part alone", () => {
    expect(chainedId('job_01KC0000000000000000000000', 0)).toBe('job_01KC0000000000000000000000');
    expect(chainedId('job_01KC0000000000000000000000', 1)).toBe('job_01KC0000000000000000000001');
    expect(chainedId('job_01KC000000000000000000000Z', 1)).toBe('job_01KC0000000000000000000010');
    expect(chainedId('job_01KC00000000000000000000ZY', 35)).toBe('job_01KC0000000000000000000111');
    expect(chainedId('job_01KC0000000000ZZZZZZZZZZZZ', 1)).toBe('job_01KC0000000001000000000000');
    // Past the largest random part it wraps around, within the same millisecond.
    expect(chainedId('job_01KC000000ZZZZZZZZZZZZZZZZ', 1)).toBe('job_01KC0000000000000000000000');
  });
});
