import { randomBytes } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import type { Actor } from '../core/actor.js';
import { ACCOUNT_CAPS, ensureUnderCap } from '../core/caps.js';
import { ApiError, invalidField, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { formatTimestamp } from '../core/time.js';
import { holdAccount } from '../db/account-lock.js';
import type { Sql } from '../db/sql.js';
import { EVENT_TYPES } from '../events/schema.js';
import type { RecordedEvent } from '../events/store.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import { EXCERPT_BYTES } from '../webhooks/send.js';
import { presentAttemptOutcome } from '../webhooks/service.js';
import type { DeliveryOutcomeInput, OpenListenerInput } from './schema.js';
import type { AttemptOutcome, ListenerAttemptRecord, ListenerStore, SessionRecord } from './store.js';

export interface ListenerTiming {
  /** How often a stream sends a heartbeat (15 s; shorter in tests). */
  heartbeatMs: number;
  /** How long a session outlives its connection (10 s). */
  graceMs: number;
}

export interface ListenerServiceDeps {
  db: Sql;
  store: ListenerStore;
  scheduler: Scheduler;
  /** Milliseconds before each retry of the account's deliveries (read through `q`). */
  retryLadderOf: (q: Sql, accountId: string) => Promise<readonly number[]>;
  timing: ListenerTiming;
  /** The wall clock: the grace after a connection closes is real time. */
  realNow: () => number;
  /** Told when an attempt of the account has its answer (an advance waiting for it looks again). */
  answered: (accountId: string) => void;
}

/** What an attempt that never reached the command says, once its session ended. */
export const GONE_MESSAGE = 'the listen session ended (its connection closed and did not come back in time)';

/**
 * Listen sessions: opening one, the connections that hold it, the command's signs of life, the
 * outcomes it reports and the retries they schedule, the attempts each event adds (in the event's
 * transaction, as the webhook outbox does), and the end of sessions whose connection is gone.
 */
export class ListenerService {
  constructor(private readonly deps: ListenerServiceDeps) {}

  /**
   * A command that hears nothing for this long takes its connection for dead, and so does the sandbox
   * that hears nothing from the command: two heartbeats missed, and half of one for the way.
   */
  get silenceMs(): number {
    return this.deps.timing.heartbeatMs * 2.5;
  }

  /** The account's listen signing secret, made at its first use and kept until the account is reset. */
  secretOf(accountId: string): Promise<string> {
    return this.deps.store.secret(this.deps.db, accountId, `whsec_${randomBytes(32).toString('base64url')}`);
  }

  async open(caller: Actor, input: OpenListenerInput): Promise<SessionRecord> {
    const forwardTo = input.forward_to == null ? null : checkForwardUrl(input.forward_to);
    const session = {
      id: newId('lsn', caller.now),
      accountId: caller.accountId,
      forwardTo,
      events: input.events ?? [...EVENT_TYPES],
      connectedAt: caller.now,
    };
    await this.deps.db.transaction(async (tx) => {
      await holdAccount(tx, caller.accountId);
      ensureUnderCap(await this.deps.store.openCount(tx, caller.accountId), ACCOUNT_CAPS.listenSessions);
      await this.deps.store.insertSession(tx, session, this.deps.realNow());
    });
    return (await this.deps.store.find(this.deps.db, caller.accountId, session.id)) as SessionRecord;
  }

  list(accountId: string): Promise<SessionRecord[]> {
    return this.deps.store.open(this.deps.db, accountId);
  }

  /** The account's session, open or ended. */
  async get(caller: Actor, id: string): Promise<SessionRecord> {
    const session = await this.deps.store.find(this.deps.db, caller.accountId, id);
    if (!session) throw notFound('listener', id);
    return session;
  }

  /** The connection `holder` takes the session up; an ended session cannot be. */
  async attach(caller: Actor, id: string, holder: string): Promise<SessionRecord> {
    const { db, store, realNow } = this.deps;
    if (!(await store.attach(db, caller.accountId, id, holder, realNow())))
      throw gone(await this.get(caller, id));
    return this.get(caller, id);
  }

  /** The connection closed: the session's grace starts now, unless another connection took it over. */
  detach(id: string, holder: string): Promise<void> {
    return this.deps.store.detach(this.deps.db, id, holder, this.deps.realNow());
  }

  /** The command answered a heartbeat: it still reads the stream. */
  async heartbeat(caller: Actor, id: string): Promise<SessionRecord> {
    const { db, store, realNow } = this.deps;
    if (!(await store.seen(db, caller.accountId, id, realNow()))) throw gone(await this.get(caller, id));
    return this.get(caller, id);
  }

  async deliveries(caller: Actor, id: string, limit: number): Promise<ListenerAttemptRecord[]> {
    const session = await this.get(caller, id);
    return this.deps.store.attempts(this.deps.db, session.id, limit);
  }

  /**
   * The command reports how the receiver answered an attempt it was handed. A failure is retried on
   * the account's ladder, through the session, for as long as the session lasts. The first outcome
   * counts: one reported again (after a reconnect) changes nothing, and the attempt is answered as it is.
   */
  async recordOutcome(
    caller: Actor,
    sessionId: string,
    attemptId: string,
    input: DeliveryOutcomeInput,
  ): Promise<ListenerAttemptRecord> {
    const { db, store, scheduler, retryLadderOf, realNow } = this.deps;
    const session = await this.get(caller, sessionId);
    const outcome = outcomeOf(input, session);
    const attempt = await db.transaction(async (tx) => {
      const found = await store.findAttempt(tx, session.id, attemptId);
      if (!found) throw notFound('delivery', attemptId);
      if (found.status !== 'sending') return found;
      const delay = outcome.ok ? undefined : (await retryLadderOf(tx, found.accountId))[found.attempt];
      const nextAt = delay === undefined ? null : (found.sentAt ?? found.scheduledAt) + delay;
      if (!(await store.recordOutcome(tx, found.id, outcome, nextAt))) return found;
      if (nextAt !== null) {
        await store.insertAttempt(tx, {
          id: newId('dlv', nextAt),
          accountId: found.accountId,
          sessionId: found.sessionId,
          eventId: found.eventId,
          eventType: found.eventType,
          attempt: found.attempt + 1,
          scheduledAt: nextAt,
        });
        scheduler.wakeFor(found.accountId, nextAt);
      }
      await store.seen(tx, caller.accountId, session.id, realNow());
      return (await store.findAttempt(tx, session.id, attemptId)) as ListenerAttemptRecord;
    });
    this.deps.answered(caller.accountId);
    return attempt;
  }

  /** Called inside the event's transaction, `tx`: one attempt per open session that wants it, due now. */
  async fanOut(tx: Sql, event: RecordedEvent): Promise<void> {
    for (const session of await this.deps.store.open(tx, event.accountId)) {
      if (!session.events.includes(event.type)) continue;
      await this.deps.store.insertAttempt(tx, {
        id: newId('dlv', event.createdAt),
        accountId: event.accountId,
        sessionId: session.id,
        eventId: event.id,
        eventType: event.type,
        attempt: 0,
        scheduledAt: event.createdAt,
      });
      this.deps.scheduler.wakeFor(event.accountId, event.createdAt);
    }
  }

  /**
   * Ends the sessions whose connection closed more than the grace ago, or whose command fell silent
   * (a holder that died with its connection), whichever process held them; what they still owed
   * fails with `listener_gone`. Any process may run it: each session ends once.
   */
  async sweep(): Promise<string[]> {
    const { db, store, timing, realNow } = this.deps;
    const now = realNow();
    const expired = await store.expired(db, {
      closedBefore: now - timing.graceMs,
      silentBefore: now - timing.graceMs - this.silenceMs,
    });
    const ended: string[] = [];
    for (const id of expired) {
      if (await db.transaction((tx) => store.end(tx, id, now, GONE_MESSAGE))) ended.push(id);
    }
    return ended;
  }

  reset(tx: Sql, accountId: string): Promise<void> {
    return this.deps.store.deleteAccount(tx, accountId);
  }
}

export function presentListener(session: SessionRecord) {
  return {
    id: session.id,
    forward_to: session.forwardTo,
    events: session.events,
    connected_at: formatTimestamp(session.connectedAt),
    connected: session.holder !== null,
  };
}

export function presentListenerAttempt(attempt: ListenerAttemptRecord) {
  return {
    id: attempt.id,
    listener_id: attempt.sessionId,
    event_id: attempt.eventId,
    event: attempt.eventType,
    attempt: attempt.attempt,
    ...presentAttemptOutcome(attempt),
  };
}

/**
 * A forward URL: absolute http or https, without credentials. No destination policy: the command
 * connects to it from its own machine, the sandbox never does.
 */
function checkForwardUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidField(
      'forward_to',
      "'forward_to' must be an absolute URL such as http://localhost:3000/webhooks.",
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalidField('forward_to', "'forward_to' must be an http:// or https:// URL.");
  if (url.username || url.password)
    throw invalidField('forward_to', "'forward_to' must not carry a user name or password.");
  return url.toString();
}

/** The reported answer as the sandbox records it: success is a 2xx (or, printing only, being taken). */
function outcomeOf(input: DeliveryOutcomeInput, session: SessionRecord): AttemptOutcome {
  const status = input.response_status;
  const error = input.error ?? null;
  if (session.forwardTo !== null && status === null && error === null)
    throw invalidField(
      'response_status',
      "A forwarded delivery's outcome needs the receiver's status, or an error saying why there is none.",
    );
  const ok = error === null && (status === null || (status >= 200 && status < 300));
  return {
    ok,
    responseStatus: status,
    responseExcerpt: excerpt(input.response_excerpt ?? null),
    durationMs: input.duration_ms,
    error: ok ? null : (error ?? 'http'),
    errorMessage: ok
      ? null
      : (input.error_message ?? (error === null ? `the receiver answered ${status}` : null)),
  };
}

/** The first EXCERPT_BYTES of the answer, in whole UTF-8 characters, as a webhook's delivery log keeps. */
function excerpt(text: string | null): string | null {
  if (text === null) return null;
  const bytes = Buffer.from(text);
  if (bytes.length <= EXCERPT_BYTES) return text;
  return new StringDecoder('utf8').write(bytes.subarray(0, EXCERPT_BYTES));
}

/** The session has ended (or another account's id was given): open a new one. */
function gone(session: SessionRecord): ApiError {
  return new ApiError(
    404,
    'not_found',
    `Listener ${session.id} has ended: its connection closed and did not come back within 10 seconds. Open a new one.`,
  );
}
