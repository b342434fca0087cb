import { setTimeout as sleep } from 'node:timers/promises';
import { formatTimestamp } from '../core/time.js';
import type { Sql } from '../db/sql.js';
import type { DueItem, DueQueue, RanJob, UpcomingItem } from '../scheduler/queue.js';
import { GONE_MESSAGE } from './service.js';
import type { ListenerAttemptRecord, ListenerStore } from './store.js';

/** How an attempt through a session shows in the summary of a clock advance and in the due list. */
export const LISTENER_ATTEMPT = 'listener.attempt';

/** How often an advance waiting for a command's answer looks again, when no answer came here. */
const ANSWER_POLL_MS = 100;
/** How much longer than a forward's own timeout an advance waits for its answer to come back. */
const ANSWER_MARGIN_MS = 2000;

export interface ListenerQueueDeps {
  db: Sql;
  store: ListenerStore;
  /** A session's attempt was handed to it: the process holding its connection sends it down. */
  handedOver: (sessionId: string) => void;
  /** Resolves when an attempt of the account is answered here, or after `ms`. */
  nextAnswer: (accountId: string, ms: number) => Promise<void>;
  /** How long a forward may take (the webhook timeout): an advance waits for an answer that long. */
  timeoutMs: number;
}

/**
 * The attempts through sessions as due work on the account's clock, as a webhook's attempts are:
 * the first is due when its event is raised, each retry when the ladder says. When one falls due
 * it is handed to its session (`sending`), and the process holding the session's connection sends
 * it down; the command reports the answer. An advance waits for those answers (`settled`), so the
 * retries they schedule within its range run in the same advance.
 */
export class ListenerQueue implements DueQueue {
  constructor(private readonly deps: ListenerQueueDeps) {}

  earliestDue(): Promise<{ accountId: string; dueAt: number }[]> {
    return this.deps.store.earliestDue(this.deps.db);
  }

  async nextDue(accountId: string, until: number): Promise<DueItem | undefined> {
    const attempt = await this.deps.store.nextDue(this.deps.db, accountId, until);
    return attempt && { dueAt: attempt.scheduledAt, order: attempt.seq, run: () => this.handOver(attempt) };
  }

  async upcoming(accountId: string, limit: number): Promise<UpcomingItem[]> {
    return (await this.deps.store.scheduled(this.deps.db, accountId, limit)).map((attempt) => ({
      id: attempt.id,
      kind: LISTENER_ATTEMPT,
      subject: attempt.id,
      dueAt: attempt.scheduledAt,
      detail: {
        listener_id: attempt.sessionId,
        event_id: attempt.eventId,
        event: attempt.eventType,
        attempt: attempt.attempt,
      },
    }));
  }

  /**
   * Resolves once no command that holds a session of the account owes an answer, or once no answer
   * has come for as long as a forward may take: a command that went silent does not hold an advance
   * up for longer, and one that answers slowly (four forwards at a time) is waited for while it does.
   */
  async settled(accountId: string): Promise<boolean> {
    const { db, store, nextAnswer, timeoutMs } = this.deps;
    const patience = timeoutMs + ANSWER_MARGIN_MS;
    let deadline = performance.now() + patience;
    let owed = await store.answersOwed(db, accountId);
    while (owed > 0 && performance.now() < deadline) {
      // An answer posted to another process is seen by looking again.
      await nextAnswer(accountId, ANSWER_POLL_MS);
      const left = await store.answersOwed(db, accountId);
      if (left < owed) deadline = performance.now() + patience;
      owed = left;
    }
    return true;
  }

  /**
   * The attempt falls due: handed to its session, or failed when the session has ended; undefined
   * when another replica took it first.
   */
  private async handOver(attempt: ListenerAttemptRecord): Promise<RanJob | undefined> {
    const { db, store } = this.deps;
    const handed = await db.transaction(async (tx) => {
      if (await store.markSending(tx, attempt.id)) return true;
      return (await store.failGone(tx, attempt.id, GONE_MESSAGE)) ? false : undefined;
    });
    if (handed === undefined) return undefined;
    if (handed) this.deps.handedOver(attempt.sessionId);
    return {
      id: attempt.id,
      kind: LISTENER_ATTEMPT,
      subject: attempt.id,
      due_at: formatTimestamp(attempt.scheduledAt),
      listener_id: attempt.sessionId,
      event_id: attempt.eventId,
      attempt: attempt.attempt,
      ...(handed ? {} : { skipped: true }),
    };
  }
}

/** Per key, the callers waiting for the next notice, each at most `ms`. */
export class Notices {
  private readonly waiting = new Map<string, Set<() => void>>();

  notify(key: string): void {
    const waiters = this.waiting.get(key);
    if (!waiters) return;
    this.waiting.delete(key);
    for (const wake of waiters) wake();
  }

  async next(key: string, ms: number): Promise<void> {
    const stop = new AbortController();
    let wake: () => void = () => undefined;
    const noticed = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const waiters = this.waiting.get(key) ?? new Set();
    waiters.add(wake);
    this.waiting.set(key, waiters);
    try {
      await Promise.race([noticed, sleep(ms, undefined, { signal: stop.signal }).catch(() => undefined)]);
    } finally {
      stop.abort();
      waiters.delete(wake);
      if (waiters.size === 0 && this.waiting.get(key) === waiters) this.waiting.delete(key);
    }
  }
}
