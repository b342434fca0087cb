import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import { AccountService } from '../src/accounts/service.js';
import { AccountStore } from '../src/accounts/store.js';
import { testConfig } from '../src/config/index.js';
import { chainedId } from '../src/core/ids.js';
import { DAY, formatTimestamp, HOUR, MINUTE } from '../src/core/time.js';
import type { SandboxDatabase, Sql } from '../src/db/sql.js';
import { sqliteDatabase } from '../src/db/sqlite.js';
import { loadScenarios, scenarioDirectories } from '../src/scenarios/files.js';
import { FINISHED_JOB_RETENTION_MS } from '../src/scheduler/purge.js';
import type { Job, JobOutcome } from '../src/scheduler/queue.js';
import { Scheduler } from '../src/scheduler/scheduler.js';
import { createSandbox, type Sandbox, sandboxSchema } from '../src/wiring.js';
import { testDatabase } from './databases.js';
import { capturingLogger, createTestSandbox, openMigratedDatabase } from './helpers.js';

const T0 = Date.UTC(2026, 10, 22, 8, 0, 0);
const ACCOUNT = DEFAULT_ACCOUNT.id;
const KIND = 'test.job';

/** The databases `setup` opened, closed once the file's tests have run. */
const opened: SandboxDatabase[] = [];
afterAll(async () => {
  await Promise.all(opened.splice(0).map((database) => database.close()));
});

/**
 * A scheduler over a fresh database (the run's engine, or SQLite at the `location` given, a file or
 * `:memory:`, whose better-sqlite3 `connection` the test may reach) with the default account and a
 * second one.
 */
async function setup(location?: string) {
  const connection = location === undefined ? undefined : openMigratedDatabase(location);
  const database = connection ? sqliteDatabase(connection, location as string) : await testDatabase();
  opened.push(database);
  await database.migrate(sandboxSchema(testConfig()));
  const db = database.sql;
  const accounts = new AccountStore(database.memory);
  const wall = { now: T0 };
  const { logger, lines } = capturingLogger();
  const service = new AccountService({
    db,
    store: accounts,
    clockSpeed: 1,
    serverRetryLadder: [],
    serverEnforcesRateLimits: true,
    offersDefaultAccount: true,
    checkScenario: () => {},
    realNow: () => T0,
    logger,
  });
  await service.seedDefaultAccount();
  const other = (await service.createAccount({})).account.id;
  const scheduler = new Scheduler(
    db,
    (id) => service.clockOf(id),
    logger,
    () => wall.now,
  );
  /** What the handlers saw, in the order they ran. */
  const seen: { subject: string; dueAt: number; accountId: string }[] = [];
  scheduler.register<{ note?: string }>(KIND, async (_tx, job) => {
    seen.push({ subject: job.subject, dueAt: job.dueAt, accountId: job.accountId });
    return { note: job.payload.note ?? job.subject };
  });
  const schedule = (subject: string, dueAt: number, options: { accountId?: string; kind?: string } = {}) =>
    scheduler.schedule(db, {
      accountId: options.accountId ?? ACCOUNT,
      kind: options.kind ?? KIND,
      subject,
      payload: {},
      dueAt,
      now: T0,
    });
  const stateOf = async (id: string) =>
    (
      (await db.get('SELECT state, error FROM jobs WHERE id = ?', [id])) as {
        state: string;
        error: string | null;
      }
    ).state;
  /** Every job's state, in the order of the ids given. */
  const statesOf = (ids: string[]) => Promise.all(ids.map(stateOf));
  return {
    db,
    connection,
    accounts,
    service,
    wall,
    other,
    scheduler,
    seen,
    schedule,
    stateOf,
    statesOf,
    logLines: lines,
  };
}

describe('Scheduler.runDue', () => {
  it('runs due jobs in time order, each with its own due time, and leaves later ones pending', async () => {
    const { db, scheduler, seen, schedule, stateOf } = await setup();
    const late = await schedule('late', T0 + 5 * HOUR);
    await schedule('third', T0 + 3 * HOUR);
    await schedule('first', T0 + HOUR);
    await schedule('second-a', T0 + 2 * HOUR);
    await schedule('second-b', T0 + 2 * HOUR);
    const edge = await schedule('edge', T0 + 4 * HOUR);

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
    expect(await stateOf(edge)).toBe('done');
    expect(await stateOf(late)).toBe('pending');
    expect((await scheduler.pending(db, KIND, 'late')).map((job) => job.dueAt)).toEqual([T0 + 5 * HOUR]);

    // Nothing runs twice; the late job runs once its time comes.
    expect(await scheduler.runDue(ACCOUNT, T0 + 4 * HOUR)).toEqual([]);
    expect((await scheduler.runDue(ACCOUNT, T0 + 5 * HOUR)).map((job) => job.subject)).toEqual(['late']);
    expect(seen).toHaveLength(6);
  });

  it('also runs the jobs that handlers schedule within the range, in time order', async () => {
    const { db, scheduler, seen, schedule } = await setup();
    scheduler.register<{ children: number[] }>('chain', async (tx, job) => {
      seen.push({ subject: job.subject, dueAt: job.dueAt, accountId: job.accountId });
      for (const [i, at] of job.payload.children.entries()) {
        await scheduler.schedule(tx, {
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
    await scheduler.schedule(db, {
      accountId: ACCOUNT,
      kind: 'chain',
      subject: 'parent',
      payload: { children: [T0 + 90 * MINUTE, T0 + 2 * HOUR, T0 + 10 * HOUR] },
      dueAt: T0 + HOUR,
      now: T0,
    });
    await schedule('sibling', T0 + 100 * MINUTE);

    const ran = await scheduler.runDue(ACCOUNT, T0 + 3 * HOUR);
    expect(ran.map((job) => job.subject)).toEqual(['parent', 'parent.0', 'sibling', 'parent.1']);
    expect(seen.map((job) => job.dueAt)).toEqual([
      T0 + HOUR,
      T0 + 90 * MINUTE,
      T0 + 100 * MINUTE,
      T0 + 2 * HOUR,
    ]);
    expect(await scheduler.pending(db, KIND, 'parent.2')).toHaveLength(1);
  });

  it('runs `afterwards` once every due job has run', async () => {
    const { scheduler, seen, schedule } = await setup();
    await schedule('a', T0 + HOUR);
    await schedule('b', T0 + 2 * HOUR);
    let seenAfterwards = -1;
    await scheduler.runDue(ACCOUNT, T0 + 2 * HOUR, {
      afterwards: async () => {
        seenAfterwards = seen.length;
      },
    });
    expect(seenAfterwards).toBe(2);
  });

  it('drops cancelled jobs: by kind and subject, or one by id', async () => {
    const { db, scheduler, seen, schedule, statesOf } = await setup();
    const a1 = await schedule('a', T0 + HOUR);
    const a2 = await schedule('a', T0 + 2 * HOUR);
    const otherKind = await schedule('a', T0 + HOUR, { kind: 'other.kind' });
    await schedule('b', T0 + HOUR);
    const c1 = await schedule('c', T0 + HOUR);
    const c2 = await schedule('c', T0 + 2 * HOUR);
    scheduler.register('other.kind', async () => ({ other: true }));

    await scheduler.cancel(db, KIND, 'a', T0);
    await scheduler.cancelJob(db, c1, T0);
    expect(await scheduler.pending(db, KIND, 'a')).toEqual([]);
    expect((await scheduler.pending(db, KIND, 'c')).map((job) => job.id)).toEqual([c2]);
    expect((await scheduler.pending(db, 'other.kind', 'a')).map((job) => job.id)).toEqual([otherKind]);

    const ran = await scheduler.runDue(ACCOUNT, T0 + 3 * HOUR);
    expect(ran.map((job) => [job.kind, job.subject])).toEqual([
      ['other.kind', 'a'],
      [KIND, 'b'],
      [KIND, 'c'],
    ]);
    expect(seen.map((job) => job.subject)).toEqual(['b', 'c']);
    expect(await statesOf([a1, a2, c1])).toEqual(['cancelled', 'cancelled', 'cancelled']);

    // Cancelling finished work changes nothing.
    await scheduler.cancel(db, KIND, 'c', T0);
    await scheduler.cancelJob(db, otherKind, T0);
    expect(await statesOf([c2, otherKind])).toEqual(['done', 'done']);
  });

  it('marks a failing job failed, logs it, and still runs the others', async () => {
    const { scheduler, seen, schedule, statesOf, db, logLines } = await setup();
    // Throws before its promise is made: a handler that is not an async function.
    scheduler.register('throws', () => {
      throw new Error('boom');
    });
    scheduler.register('rejects', async () => {
      await Promise.resolve();
      throw new Error('async boom');
    });
    const before = await schedule('before', T0 + HOUR);
    const thrown = await schedule('x', T0 + 2 * HOUR, { kind: 'throws' });
    const rejected = await schedule('y', T0 + 3 * HOUR, { kind: 'rejects' });
    const orphan = await schedule('z', T0 + 4 * HOUR, { kind: 'nobody.handles.this' });
    const after = await schedule('after', T0 + 5 * HOUR);

    const ran = await scheduler.runDue(ACCOUNT, T0 + 5 * HOUR);
    expect(ran.map((job) => [job.subject, job.error])).toEqual([
      ['before', undefined],
      ['x', 'boom'],
      ['y', 'async boom'],
      ['z', 'no handler'],
      ['after', undefined],
    ]);
    expect(seen.map((job) => job.subject)).toEqual(['before', 'after']);
    expect(await statesOf([before, thrown, rejected, orphan, after])).toEqual([
      'done',
      'failed',
      'failed',
      'failed',
      'done',
    ]);
    const row = await db.get('SELECT error, finished_at FROM jobs WHERE id = ?', [thrown]);
    expect(row).toEqual({ error: 'Error: boom', finished_at: T0 + 2 * HOUR });
    expect(logLines.filter((line) => line.msg === 'job failed')).toHaveLength(2);
    // A failed job is not retried by a later run.
    expect(await scheduler.runDue(ACCOUNT, T0 + 6 * HOUR)).toEqual([]);
  });

  it("commits a handler's writes with its job's `done`, and undoes both when the handler fails", async () => {
    const { db, scheduler, schedule, stateOf } = await setup();
    let failure: Error | undefined = Object.assign(new Error('database or disk is full'), {
      code: 'SQLITE_FULL',
    });
    const statesWhileRunning: unknown[] = [];
    scheduler.register('writes', async (tx, job) => {
      await scheduler.schedule(tx, {
        accountId: job.accountId,
        kind: KIND,
        subject: 'written',
        payload: {},
        dueAt: job.dueAt + DAY,
        now: job.dueAt,
      });
      // Not marked running: the job stays pending until its `done` commits with what it wrote.
      statesWhileRunning.push(await tx.value('SELECT state FROM jobs WHERE id = ?', [job.id]));
      if (failure) throw failure;
      return { wrote: true };
    });
    const job = await schedule('writes', T0 + HOUR, { kind: 'writes' });

    // A passing storage failure: nothing it wrote is kept, the job stays pending and the run fails.
    await expect(scheduler.runDue(ACCOUNT, T0 + HOUR)).rejects.toMatchObject({ code: 'SQLITE_FULL' });
    expect(await stateOf(job)).toBe('pending');
    expect(await scheduler.pending(db, KIND, 'written')).toEqual([]);

    // The same job runs again once writing works: its write and its `done` are both there.
    failure = undefined;
    const ran = await scheduler.runDue(ACCOUNT, T0 + HOUR);
    expect(ran.map((item) => [item.id, item.wrote])).toEqual([[job, true]]);
    expect(await stateOf(job)).toBe('done');
    expect(await scheduler.pending(db, KIND, 'written')).toHaveLength(1);
    expect(statesWhileRunning).toEqual(['pending', 'pending']);

    // A bug is no passing failure: the job is marked failed, and what it wrote is undone all the same.
    failure = new Error('a bug');
    const buggy = await schedule('buggy', T0 + 2 * HOUR, { kind: 'writes' });
    expect((await scheduler.runDue(ACCOUNT, T0 + 2 * HOUR)).map((item) => item.error)).toEqual(['a bug']);
    expect(await stateOf(buggy)).toBe('failed');
    expect(await scheduler.pending(db, KIND, 'written')).toHaveLength(1);
  });

  it('keeps accounts apart: running one account runs none of the other', async () => {
    const { db, scheduler, seen, schedule, other } = await setup();
    await schedule('mine', T0 + HOUR);
    await schedule('theirs', T0 + HOUR, { accountId: other });
    await schedule('theirs-too', T0 + 30 * MINUTE, { accountId: other });

    expect((await scheduler.runDue(ACCOUNT, T0 + 10 * HOUR)).map((job) => job.subject)).toEqual(['mine']);
    expect(seen.map((job) => job.accountId)).toEqual([ACCOUNT]);
    expect(await scheduler.pending(db, KIND, 'theirs')).toHaveLength(1);

    const theirs = await scheduler.runDue(other, T0 + 10 * HOUR);
    expect(theirs.map((job) => job.subject)).toEqual(['theirs-too', 'theirs']);
    expect(seen.slice(1).map((job) => job.accountId)).toEqual([other, other]);
  });

  it("serialises an account's runs: two overlapping runs never interleave or repeat a job", async () => {
    const { scheduler, db, service, other } = await setup();
    const trace: string[] = [];
    const slow = new Scheduler(
      db,
      (id) => service.clockOf(id),
      capturingLogger().logger,
      () => T0,
    );
    slow.register(KIND, async (_tx: Sql, job: Job) => {
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
      await slow.schedule(db, { accountId: ACCOUNT, kind: KIND, subject, payload: {}, dueAt: at, now: T0 });
    }
    await slow.schedule(db, { accountId: other, kind: KIND, subject: 'o', payload: {}, dueAt: T0, now: T0 });

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
    expect(await scheduler.pending(db, KIND, 'a')).toEqual([]);

    // The other account does not wait for this one: its run goes ahead while this account's turn is
    // held. (Not read from the trace's order: each job runs in a transaction of its own, and on
    // SQLite's one connection a transaction waits for the one open, whichever account's it is.)
    let release = () => {};
    const held = slow.withAccountLock(
      ACCOUNT,
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
        }),
    );
    await slow.schedule(db, { accountId: other, kind: KIND, subject: 'o2', payload: {}, dueAt: T0, now: T0 });
    expect((await slow.runDue(other, T0)).map((job) => job.subject)).toEqual(['o2']);
    release();
    await held;
  });
});

describe('advanceClock', () => {
  /** A sandbox over the run's engine with the default account's clock frozen at T0 and a job handler. */
  async function stateWithJobs() {
    const state = await createTestSandbox();
    state.wall.now = T0;
    await state.services.clock.set(ACCOUNT, { frozen: true });
    const seen: number[] = [];
    state.scheduler.register(KIND, async (_tx, job) => {
      seen.push(job.dueAt);
      return undefined;
    });
    for (const at of [T0 + HOUR, T0 + 2 * HOUR, T0 + 3 * HOUR]) {
      await state.scheduler.schedule(state.db, {
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
    const { state, seen } = await stateWithJobs();
    const answer = await state.services.clock.advance(ACCOUNT, { by: '2h' });
    expect(seen).toEqual([T0 + HOUR, T0 + 2 * HOUR]);
    expect(answer.now).toBe('2026-11-22T10:00:00Z');
    expect(answer.ran.map((job) => job.due_at)).toEqual(['2026-11-22T09:00:00Z', '2026-11-22T10:00:00Z']);
  });

  it('never moves the clock backwards when two advances overlap', async () => {
    const { state, seen } = await stateWithJobs();
    // Both read the clock at 08:00 while the account's turn is held; the longer one queues for it first.
    // (Each waits for its answers from the database before it queues: on PostgreSQL, in no set order.)
    const runDue = state.scheduler.runDue.bind(state.scheduler);
    let queued = () => {};
    vi.spyOn(state.scheduler, 'runDue').mockImplementation((...args) => {
      const run = runDue(...args);
      queued();
      return run;
    });
    const nextQueued = () =>
      new Promise<void>((resolve) => {
        queued = resolve;
      });
    let release = () => {};
    const held = state.scheduler.withAccountLock(
      ACCOUNT,
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
        }),
    );
    const longQueued = nextQueued();
    const longAdvance = state.services.clock.advance(ACCOUNT, { by: '2h' });
    await longQueued;
    const shortQueued = nextQueued();
    const shortAdvance = state.services.clock.advance(ACCOUNT, { to: '2026-11-22T09:00:00Z' });
    await shortQueued;
    release();
    const [long, short] = await Promise.all([longAdvance, shortAdvance, held]);
    expect(long.now).toBe('2026-11-22T10:00:00Z');
    expect(short).toMatchObject({ now: '2026-11-22T10:00:00Z', ran: [] });
    expect(formatTimestamp((await state.services.accounts.clockOf(ACCOUNT))!.anchorVirtual)).toBe(
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

  /** A sandbox over SQLite in `file`; `db` is its better-sqlite3 connection. */
  async function openState(file: string, wall: { now: number }) {
    const config = testConfig();
    const db = openMigratedDatabase(file);
    const state = await createSandbox({
      database: sqliteDatabase(db, file),
      config,
      logger: capturingLogger().logger,
      scenarios: loadScenarios(scenarioDirectories(undefined)),
      realNow: () => wall.now,
    });
    const seen: { subject: string; dueAt: number }[] = [];
    state.scheduler.register(KIND, async (_tx, job) => {
      seen.push({ subject: job.subject, dueAt: job.dueAt });
      return undefined;
    });
    return { db, state, seen };
  }

  const jobStates = (db: Database.Database) =>
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

    const first = await openState(file, wall);
    const schedule = (state: Sandbox, subject: string, dueAt: number) =>
      state.scheduler.schedule(state.db, {
        accountId: ACCOUNT,
        kind: KIND,
        subject,
        payload: {},
        dueAt,
        now: T0,
      });
    await schedule(first.state, 'crashed', T0 + HOUR);
    await schedule(first.state, 'overdue', T0 + 2 * HOUR);
    await schedule(first.state, 'future', T0 + 5 * HOUR);
    // The process dies while the first job is running.
    first.db.prepare("UPDATE jobs SET state = 'running' WHERE subject = 'crashed'").run();
    first.db.close();

    // Three hours of real time pass while the sandbox is down; the account's clock runs at speed 1.
    wall.now += 3 * HOUR;
    const second = await openState(file, wall);
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

  /**
   * Over SQLite in memory, whichever the run's engine: with the timers simulated, a round's statements
   * must answer within the simulated instant that runs them, and a round trip to PostgreSQL would end
   * after the test has looked.
   */
  const setupInMemory = () => setup(':memory:');

  /** Fake timers only: the scheduler's sleeps are simulated, `wall.now` is moved by hand alongside. */
  async function passRealTime(wall: { now: number }, ms: number) {
    wall.now += ms;
    await vi.advanceTimersByTimeAsync(ms);
  }

  it('runs jobs when a running clock reaches them, at any speed', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { scheduler, service, seen, schedule, wall } = await setupInMemory();
    await service.saveClock(ACCOUNT, { anchorReal: T0, anchorVirtual: T0, speed: 3600, frozen: false });
    await schedule('half-hour', T0 + 30 * MINUTE);
    await schedule('two-hours', T0 + 2 * HOUR);

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
    const { scheduler, service, seen, schedule, wall } = await setupInMemory();
    await service.saveClock(ACCOUNT, { anchorReal: T0, anchorVirtual: T0, speed: 3600, frozen: true });
    await schedule('in-an-hour', T0 + HOUR);

    await scheduler.start();
    // Running, the clock would have passed the job 29 hours ago.
    await passRealTime(wall, 30_000);
    expect(seen).toEqual([]);

    // Unfrozen at virtual T0: an hour at 3600x is a second of real time from here.
    const clock = (await service.clockOf(ACCOUNT))!;
    await service.saveClock(ACCOUNT, { ...clock, anchorReal: wall.now, frozen: false });
    scheduler.wake();
    await passRealTime(wall, 999);
    expect(seen).toEqual([]);
    await passRealTime(wall, 1);
    expect(seen).toEqual([{ subject: 'in-an-hour', dueAt: T0 + HOUR, accountId: ACCOUNT }]);

    // A job scheduled while running, already due, runs without waiting for the next poll.
    await schedule('now', T0);
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.map((job) => job.subject)).toEqual(['in-an-hour', 'now']);
    await scheduler.stop();
  });

  it('stops: nothing runs after stop()', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { db, scheduler, seen, schedule, wall } = await setup();
    await schedule('later', T0 + HOUR);
    await scheduler.start();
    await scheduler.stop();
    await passRealTime(wall, 2 * HOUR);
    expect(seen).toEqual([]);
    expect(await scheduler.pending(db, KIND, 'later')).toHaveLength(1);
  });
});

describe('finished jobs', () => {
  const ids = (db: Sql) => db.column<string>('SELECT id FROM jobs ORDER BY seq');

  it('are deleted a day after they finished on their account clock; pending ones never are', async () => {
    expect(FINISHED_JOB_RETENTION_MS).toBe(DAY);
    const { db, scheduler, schedule, stateOf, statesOf, other } = await setup();
    scheduler.register('throws', async () => {
      throw new Error('boom');
    });
    const done = await schedule('done', T0 + HOUR);
    const failed = await schedule('failed', T0 + 2 * HOUR, { kind: 'throws' });
    const cancelled = await schedule('cancelled', T0 + 3 * HOUR);
    await scheduler.cancelJob(db, cancelled, T0 + 30 * MINUTE);
    const pending = await schedule('pending', T0 + 10 * DAY);
    const theirs = await schedule('theirs', T0 + HOUR, { accountId: other });
    await scheduler.runDue(other, T0 + HOUR);

    await scheduler.runDue(ACCOUNT, T0 + 2 * HOUR);
    expect(await statesOf([done, failed, cancelled, pending])).toEqual([
      'done',
      'failed',
      'cancelled',
      'pending',
    ]);

    // Kept for a day after they finished: the cancelled one (30 min), then the done one (1 h).
    await scheduler.runDue(ACCOUNT, T0 + 30 * MINUTE + DAY);
    expect(await ids(db)).toEqual([done, failed, cancelled, pending, theirs]);
    await scheduler.runDue(ACCOUNT, T0 + 30 * MINUTE + DAY + 1);
    expect(await ids(db)).toEqual([done, failed, pending, theirs]);
    await scheduler.runDue(ACCOUNT, T0 + 2 * HOUR + DAY + 1);
    // The other account's jobs wait for its own clock.
    expect(await ids(db)).toEqual([pending, theirs]);

    expect(await scheduler.purgeFinished(other, T0 + HOUR + DAY + 1)).toBe(1);
    // Running the pending one later finishes it; a day after that it goes too.
    await scheduler.runDue(ACCOUNT, T0 + 10 * DAY);
    expect(await stateOf(pending)).toBe('done');
    await scheduler.runDue(ACCOUNT, T0 + 11 * DAY + 1);
    expect(await ids(db)).toEqual([]);
  });

  it('of accounts with no work left are deleted when the scheduler starts', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const { db, scheduler, schedule, wall, other } = await setup();
      const mine = await schedule('mine', T0 + HOUR);
      const theirs = await schedule('theirs', T0 + HOUR, { accountId: other });
      await scheduler.runDue(ACCOUNT, T0 + HOUR);
      await scheduler.runDue(other, T0 + HOUR);
      expect(await ids(db)).toEqual([mine, theirs]);

      // Both clocks run at real speed: two days later, the finished jobs are past the retention.
      wall.now = T0 + 2 * DAY;
      await scheduler.start();
      expect(await ids(db)).toEqual([]);
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

  /**
   * The scheduler over a SQLite database file (its own errors are the passing failures here), its
   * timers simulated; `wall.now` is moved with them.
   */
  async function onFile() {
    const dir = mkdtempSync(path.join(tmpdir(), 'sandbox-scheduler-'));
    dirs.push(dir);
    const file = path.join(dir, 'sandbox.db');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const state = await setup(file);
    return { file, ...state, connection: state.connection as Database.Database };
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
    const { db, connection, scheduler, schedule, stateOf, wall, logLines } = await onFile();
    let tries = 0;
    scheduler.register('writes.a.lot', async (tx, job) => {
      tries += 1;
      // More than the free space of any page: the database has to grow to hold it.
      await scheduler.schedule(tx, {
        accountId: job.accountId,
        kind: KIND,
        subject: 'big',
        payload: { text: 'x'.repeat(64 * 1024) },
        dueAt: job.dueAt + DAY,
        now: job.dueAt,
      });
      return undefined;
    });
    const job = await schedule('grows', T0 + MINUTE, { kind: 'writes.a.lot' });
    await scheduler.start();

    // The database may not grow by one more page: SQLite answers SQLITE_FULL, as on a full disk.
    connection.pragma(`max_page_count = ${connection.pragma('page_count', { simple: true })}`);
    await passRealTime(wall, MINUTE);
    expect(tries).toBe(1);
    await passRealTime(wall, MINUTE);
    // Tried at 0, 1, 3, 7, 15 and 31 seconds (the wait doubling from 1 s up to 30 s): a handful of
    // tries in a minute, where a spinning scheduler makes thousands.
    expect(tries).toBeGreaterThanOrEqual(5);
    expect(tries).toBeLessThanOrEqual(7);
    expect(await stateOf(job)).toBe('pending');
    expect(messages(logLines)).toEqual([
      'background work is backing off: the disk is full; it resumes by itself once writing works again',
    ]);
    expect(logLines[0]).toMatchObject({ level: 40, code: 'SQLITE_FULL' });

    // Space is freed: the next try, at most 30 s later, succeeds, without a restart.
    const triesWhileFull = tries;
    connection.pragma('max_page_count = 1000000000');
    await passRealTime(wall, 30_000);
    expect(await stateOf(job)).toBe('done');
    expect(tries).toBe(triesWhileFull + 1);
    expect(await scheduler.pending(db, KIND, 'big')).toHaveLength(1);
    expect(messages(logLines)).toEqual([
      'background work is backing off: the disk is full; it resumes by itself once writing works again',
      'background work resumed: writing works again',
    ]);
    await scheduler.stop();
  });

  it('runs a job that failed because the database was busy again later, and marks a job with a bug failed', async () => {
    const { db, connection, file, scheduler, schedule, statesOf, wall, logLines, other } = await onFile();
    // Fail at once when another connection holds the write lock, rather than wait 5 s for it.
    connection.pragma('busy_timeout = 0');
    const seen: string[] = [];
    scheduler.register('writes', async (tx, job) => {
      seen.push(job.subject);
      await scheduler.schedule(tx, {
        accountId: job.accountId,
        kind: KIND,
        subject: 'next',
        payload: {},
        dueAt: job.dueAt + DAY,
        now: job.dueAt,
      });
      return { wrote: true };
    });
    scheduler.register('buggy', async (_tx, job) => {
      seen.push(job.subject);
      return (undefined as unknown as { oops(): JobOutcome }).oops();
    });
    const writes = await schedule('writes', T0 + MINUTE, { kind: 'writes' });
    const buggy = await schedule('buggy', T0 + MINUTE, { kind: 'buggy', accountId: other });
    await scheduler.start();

    // Another connection holds the database's write lock: every write here is SQLITE_BUSY.
    const blocker = new Database(file);
    blocker.exec('BEGIN IMMEDIATE');
    try {
      await passRealTime(wall, 2 * MINUTE);
      expect(seen.filter((subject) => subject === 'writes').length).toBeGreaterThanOrEqual(2);
      expect(seen.filter((subject) => subject === 'writes').length).toBeLessThanOrEqual(10);
      // Neither could be written: the job is pending, and so is the buggy one (its `failed` too is a write).
      expect(await statesOf([writes, buggy])).toEqual(['pending', 'pending']);
      expect(messages(logLines)).toEqual([
        'background work is backing off: the database is busy; it resumes by itself once writing works again',
      ]);
    } finally {
      blocker.exec('ROLLBACK');
      blocker.close();
    }

    await passRealTime(wall, 30_000);
    expect(await statesOf([writes, buggy])).toEqual(['done', 'failed']);
    expect(await scheduler.pending(db, KIND, 'next')).toHaveLength(1);
    const failed = await db.value('SELECT error FROM jobs WHERE id = ?', [buggy]);
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
  function chained(db: Sql, scheduler: Scheduler, seen: string[]) {
    type Link = { index: number; length: number; start: number; step: number };
    const dueAt = (link: Link, index: number) => link.start + index * link.step;
    scheduler.register<Link>(LINK, {
      run: async (tx, job) => {
        seen.push(`${job.subject}${job.payload.index}`);
        const next = job.payload.index + 1;
        if (next < job.payload.length) {
          await scheduler.continueChain(tx, job, 1, {
            payload: { ...job.payload, index: next },
            dueAt: dueAt(job.payload, next),
            now: job.payload.start,
          });
        }
        return { index: job.payload.index };
      },
      upcoming: async (job) =>
        Array.from({ length: job.payload.length - job.payload.index }, (_, ahead) => ({
          ahead,
          dueAt: dueAt(job.payload, job.payload.index + ahead),
          detail: { index: job.payload.index + ahead },
        })),
    });
    return (subject: string, start: number, length: number, step = HOUR) =>
      scheduler.startChain(
        db,
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
    const { scheduler, schedule, db } = await setup();
    const seen: string[] = [];
    const start = chained(db, scheduler, seen);
    const first = await start('a', T0 + HOUR, 3);
    // Added after the chain started, due with its second and third links: those run first, as jobs
    // added before it would; `early` runs before them by its time.
    await schedule('early', T0 + 90 * MINUTE);
    await schedule('late', T0 + 2 * HOUR);
    await schedule('later', T0 + 3 * HOUR);
    const count = () => db.value("SELECT count(*) FROM jobs WHERE state = 'pending' AND subject = 'a'");
    expect(await count()).toBe(1);

    const due = await scheduler.upcoming(ACCOUNT, 10);
    expect(due.map((item) => [item.subject, item.dueAt - T0, item.detail])).toEqual([
      ['a', HOUR, { index: 0 }],
      ['early', 90 * MINUTE, {}],
      ['a', 2 * HOUR, { index: 1 }],
      ['late', 2 * HOUR, {}],
      ['a', 3 * HOUR, { index: 2 }],
      ['later', 3 * HOUR, {}],
    ]);
    expect(await scheduler.upcoming(ACCOUNT, 3)).toEqual(due.slice(0, 3));

    const ran = await scheduler.runDue(ACCOUNT, T0 + 2 * HOUR);
    expect(ran.map((job) => job.subject)).toEqual(['a', 'early', 'a', 'late']);
    expect(await count()).toBe(1);
    const rest = await scheduler.runDue(ACCOUNT, T0 + 5 * HOUR);
    expect(rest.map((job) => job.subject)).toEqual(['a', 'later']);
    expect(seen).toEqual(['a0', 'a1', 'a2']);
    expect(await count()).toBe(0);

    // Each link ran under the identifier the list gave it, the first's counted on.
    const links = [...ran, ...rest].filter((job) => job.subject === 'a');
    expect(links.map((job) => job.id)).toEqual([first.id, chainedId(first.id, 1), chainedId(first.id, 2)]);
    expect(due.filter((item) => item.subject === 'a').map((item) => item.id)).toEqual(
      links.map((job) => job.id),
    );
  });

  it('keeps the places of two chains started one after the other, whichever runs first', async () => {
    const { db, scheduler } = await setup();
    const seen: string[] = [];
    const start = chained(db, scheduler, seen);
    // b's first link runs before a's; their second links are due together, and a's was planned first.
    await start('a', T0 + 2 * HOUR, 2);
    await start('b', T0 + HOUR, 2, 2 * HOUR);
    await scheduler.runDue(ACCOUNT, T0 + 3 * HOUR);
    expect(seen).toEqual(['b0', 'a0', 'a1', 'b1']);
  });

  it('can skip links: a link further on takes its own place and identifier', async () => {
    const { scheduler, db } = await setup();
    const seen: string[] = [];
    const start = chained(db, scheduler, seen);
    const first = await start('a', T0 + HOUR, 4);
    await scheduler.cancelJob(db, first.id, T0);
    const third = await scheduler.continueChain(db, first, 2, {
      payload: { index: 2, length: 4, start: T0 + HOUR, step: HOUR },
      dueAt: T0 + 3 * HOUR,
      now: T0,
    });
    expect(third).toMatchObject({ id: chainedId(first.id, 2), seq: first.seq + 2 });
    expect(await db.value('SELECT id FROM jobs WHERE seq = ?', [first.seq + 2])).toBe(third.id);
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
