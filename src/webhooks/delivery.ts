import type { Logger } from 'pino';
import { newId } from '../core/ids.js';
import type { WorkMetrics } from '../core/metrics.js';
import { formatTimestamp } from '../core/time.js';
import type { Sql } from '../db/sql.js';
import type { EventType } from '../events/schema.js';
import type { RecordedEvent } from '../events/store.js';
import type { DueItem, DueQueue, RanJob, UpcomingItem } from '../scheduler/queue.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { AttemptRecord, AttemptStore } from './attempt-store.js';
import type { DestinationPolicy } from './destinations.js';
import { DeliveryDispatcher } from './dispatcher.js';
import { WebhookOutbox } from './outbox.js';
import { type ProbeOutcome, probeWebhook } from './probe.js';
import { deliveryHeaders, type ResolveHost } from './send.js';
import type { WebhookRecord, WebhookStore } from './store.js';

/** A delivery's request as it went on the wire. */
export interface SentRequest {
  method: 'POST';
  url: string;
  headers: Record<string, string>;
  body: string;
}

const CLAIMED_ELSEWHERE = Symbol('claimed by another replica');

/**
 * How much longer than a send's timeout an advance waits for other replicas' sends when none of them
 * changes: as long as a slot on the wire lasts (dispatcher.ts).
 */
const STALL_MARGIN_MS = 5_000;

/** How an attempt shows in the summary of a clock advance. */
export const WEBHOOK_ATTEMPT = 'webhook.attempt';

export interface WebhookDeliveryDeps {
  db: Sql;
  store: WebhookStore;
  attempts: AttemptStore;
  scheduler: Scheduler;
  /** An event's envelope, byte for byte as first recorded (the events module). */
  eventBody: (eventId: string) => Promise<string | undefined>;
  /** Milliseconds before each retry of the account's deliveries (read through `q`). */
  retryLadderOf: (q: Sql, accountId: string) => Promise<readonly number[]>;
  /** How long a receiver may take to answer, in real time. */
  timeoutMs: number;
  /** Where webhooks may deliver (`--webhook-targets`, `--webhook-allow-host`). */
  destinations: DestinationPolicy;
  /** Resolves a receiver's host name to all its addresses; the system's resolver unless a test says. */
  resolve?: ResolveHost;
  /**
   * Records a test event with sample data for a probe, inside the probe's transaction, without
   * announcing it to the other webhooks (the events module).
   */
  recordTestEvent: (tx: Sql, accountId: string, type: EventType, now: number) => Promise<RecordedEvent>;
  /** The wall clock, for the time each attempt went out (the report shows both clocks). */
  realNow?: () => number;
  /** The instant the account's clock reads now; undefined for no such account (the clock module). */
  nowOf: (accountId: string) => Promise<number | undefined>;
  logger: Logger;
  metrics: WorkMetrics;
}

/**
 * Webhook delivery: the outbox and its dispatcher.
 *
 * An event's attempts are written, `scheduled` and due at once, in the transaction that records the
 * event (outbox.ts). The attempts table is itself the scheduler's queue of due deliveries: when an
 * attempt falls due on its account's clock it becomes `sending`, the send starts (dispatcher.ts)
 * and the scheduler moves on, so a slow receiver never holds up the scheduler, the API or other
 * receivers. The outcome is written when the receiver answers (or times out), and a failure
 * schedules the next attempt on the account's clock. An attempt left `sending` by a crash is sent
 * again at start, and one whose outcome could not be written goes out again a little later (takeBack),
 * so nothing is lost and nothing is marked delivered without a 2xx.
 */
/**
 * How long, on the account's clock, an attempt whose send ended without an outcome written waits
 * before it goes out again, counted from its send or the clock's present, whichever is later (see
 * takeBack).
 */
export const RESEND_UNSENT_MS = 30_000;
/**
 * Times one attempt is taken back before it is left `sending` until the next start: a database that
 * refuses every outcome would otherwise have an advance of a day send it every 30 seconds.
 */
const TAKE_BACKS = 3;

export class WebhookDelivery implements DueQueue {
  private readonly outbox: WebhookOutbox;
  private readonly dispatcher: DeliveryDispatcher;
  /** Attempts this process claimed to take over and has not yet handed to the dispatcher. */
  private readonly takingOver = new Set<string>();
  /**
   * By account, the attempts taken back (takeBack) that the database has not yet put back, and their
   * new due time. Kept by account because every look for an account's due work puts back what it owes:
   * one map of every account's would have each look and each take-back pass over all of them, work
   * quadratic in what an outage leaves owed.
   */
  private readonly owed = new Map<string, Map<string, number>>();
  /** How many times each attempt was taken back by this process (see TAKE_BACKS). */
  private readonly takenBack = new Map<string, number>();

  constructor(private readonly deps: WebhookDeliveryDeps) {
    this.outbox = new WebhookOutbox(deps);
    this.dispatcher = new DeliveryDispatcher({
      ...deps,
      settle: (tx, attempt, result, sentAt, manual) =>
        this.outbox.settle(tx, attempt, result, sentAt, manual),
      unsent: (attempt, sentAt) => this.takeBack(attempt, sentAt),
    });
  }

  /** Called inside the event's transaction, `tx`: one attempt per subscribed active webhook, due now. */
  fanOut(tx: Sql, event: RecordedEvent): Promise<void> {
    return this.outbox.fanOut(tx, event);
  }

  /**
   * Over the webhooks whose sends are held up (dispatcher.ts), the account's earliest due attempt of
   * another webhook: the timer does not wake for work this process would not take.
   */
  async earliestDue(): Promise<{ accountId: string; dueAt: number }[]> {
    const { db, attempts } = this.deps;
    const due = await attempts.earliestDue(db);
    const heldUp = this.dispatcher.heldUp();
    if (heldUp.size === 0) return due;
    const planned = await Promise.all(
      due.map(async (entry) => {
        const skipped = heldUp.get(entry.accountId);
        if (!skipped) return entry;
        const next = await attempts.nextDueSkipping(db, entry.accountId, Number.MAX_SAFE_INTEGER, skipped);
        return next && { accountId: entry.accountId, dueAt: next.scheduledAt };
      }),
    );
    return planned.filter((entry) => entry !== undefined);
  }

  async upcoming(accountId: string, limit: number): Promise<UpcomingItem[]> {
    return (await this.deps.attempts.scheduled(this.deps.db, accountId, limit)).map((attempt) => ({
      id: attempt.id,
      kind: WEBHOOK_ATTEMPT,
      subject: attempt.id,
      dueAt: attempt.scheduledAt,
      detail: {
        webhook_id: attempt.webhookId,
        event_id: attempt.eventId,
        event: attempt.eventType,
        attempt: attempt.attempt,
      },
    }));
  }

  /** Attempts of a webhook whose sends are held up wait (an advance waits for those sends, then goes on). */
  async nextDue(accountId: string, until: number): Promise<DueItem | undefined> {
    const { db, attempts } = this.deps;
    // A stopping sandbox sends nothing more: what is due stays due for the next start.
    if (this.dispatcher.stopping) return undefined;
    // Still refused: owed until a later look, and the rest of the account's work goes on.
    if (this.owed.has(accountId))
      await this.putBack(accountId).catch((error: unknown) => {
        this.deps.logger.warn({ err: error, account: accountId }, 'could not put a delivery back');
      });
    const skipped = this.dispatcher.heldUp().get(accountId);
    const attempt =
      skipped === undefined
        ? await attempts.nextDue(db, accountId, until)
        : await attempts.nextDueSkipping(db, accountId, until, skipped);
    return (
      attempt && { dueAt: attempt.scheduledAt, order: attempt.seq, run: () => this.startSending(attempt) }
    );
  }

  /**
   * True once every send of the account that is on the wire now has its outcome written, by this
   * replica or any other; a send whose replica died is taken over and waited for too. False sooner
   * when a webhook of the account that held as many sends as it may has room for the next.
   */
  async settled(accountId: string): Promise<boolean> {
    const { db, attempts } = this.deps;
    if (!(await this.dispatcher.settled(accountId))) return false;
    if (db.engine === 'sqlite') return true;
    // Waited for: this process's sends while it holds them (or is taking them over), and another's until
    // the slot it took on the wire ends, by which time the send has timed out: one whose outcome could
    // not be written stays `sending` for good (until its sender's next start, or its takeover once it
    // died), and waiting on it would hold the advance forever. Another's that never took a slot (its
    // send failed first) is waited for only while the sends waited for change now and then. A stopping
    // sandbox leaves its cut-off sends `sending` for the next start, so it waits for none.
    const me = this.deps.scheduler.replica.id;
    const patience = this.deps.timeoutMs + STALL_MARGIN_MS;
    let waitedFor = '';
    let stallsAt = performance.now() + patience;
    const onTheWire = async () => {
      const sends = (await attempts.sending(db, accountId, me)).filter((attempt) =>
        attempt.mine
          ? this.dispatcher.holds(attempt.id) || this.takingOver.has(attempt.id)
          : !attempt.slotOver,
      );
      const now = performance.now();
      const ids = sends.map((attempt) => attempt.id).join(' ');
      if (ids !== waitedFor) {
        waitedFor = ids;
        stallsAt = now + patience;
      }
      return sends.some((attempt) => attempt.mine) || (sends.length > 0 && now < stallsAt);
    };
    for (let pause = 5; !this.dispatcher.stopping && (await onTheWire()); pause = Math.min(pause * 2, 100)) {
      await this.takeOverAbandoned(undefined, accountId);
      if (!(await this.dispatcher.settled(accountId))) return false;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
    return true;
  }

  /**
   * The request an attempt made, as the receiver got it: the URL and signature it was sent with, the
   * headers built as `send.ts` builds them, and the event's bytes. Null until the attempt is sent,
   * and for an attempt that sent nothing (a refused destination).
   */
  async sentRequest(attempt: AttemptRecord): Promise<SentRequest | null> {
    const sent = await this.deps.attempts.sentRequest(this.deps.db, attempt.id);
    const body = sent && (await this.deps.eventBody(attempt.eventId));
    if (!sent || body === undefined) return null;
    const request = {
      body,
      eventId: attempt.eventId,
      attempt: attempt.attempt,
      probe: attempt.probe !== null,
    };
    return {
      method: 'POST',
      url: sent.url,
      headers: deliveryHeaders(new URL(sent.url), request, sent.signature),
      body,
    };
  }

  /**
   * At start: attempts that were on the wire when the process stopped are sent again. With several
   * replicas, each also takes over, at every heartbeat, those of a replica that died; and a clock
   * advance takes over the account's at once rather than wait for a heartbeat.
   */
  async start(): Promise<void> {
    const { db, scheduler } = this.deps;
    // Over SQLite this process is the only sender: whatever is `sending` was left by the one before.
    await this.takeOverAbandoned(db.engine === 'sqlite' ? 'FALSE' : undefined);
    scheduler.everyBeat(() => this.takeOverAbandoned());
  }

  /**
   * Claims the attempts whose sender is gone and sends them again, but a probe's: whoever asked for it
   * had their answer cut off, so it is not sent to anyone after the fact. Past a webhook's share of held
   * sends, a scheduled attempt goes back among the scheduled ones, to be taken as the webhook has room.
   */
  private async takeOverAbandoned(holderAlive?: string, accountId?: string): Promise<void> {
    const { db, attempts, scheduler } = this.deps;
    const { replica } = scheduler;
    const alive = holderAlive ?? replica.alive('webhook_attempts.claimed_by');
    const claimed = await attempts.claimAbandoned(db, replica.id, alive, accountId);
    for (const attempt of claimed) this.takingOver.add(attempt.id);
    for (const [index, attempt] of claimed.entries()) {
      try {
        await this.takeOver(attempt);
      } catch (error) {
        // Given back, this one and those after it, for the next take-over: held by a live replica
        // that is not sending them, nobody would ever send them.
        for (const left of claimed.slice(index)) {
          this.takingOver.delete(left.id);
          await attempts.releaseClaim(db, left.id, replica.id).catch(() => undefined);
        }
        throw error;
      }
      this.takingOver.delete(attempt.id);
    }
  }

  private async takeOver(attempt: AttemptRecord): Promise<void> {
    const { db, attempts, scheduler, logger } = this.deps;
    const { replica } = scheduler;
    if (!attempt.redelivery && attempt.probe === null && this.dispatcher.holdsAllItMay(attempt.webhookId)) {
      await attempts.requeue(db, attempt.id, replica.id);
      scheduler.runSoon(attempt.accountId);
      return;
    }
    if (attempt.probe !== null) {
      await attempts.cancelAttempt(db, attempt.id, 'a probe cut off by a restart is not sent again');
      return;
    }
    const webhook = await this.recipientOf(db, attempt);
    if (!webhook) {
      await attempts.cancelAttempt(db, attempt.id, 'the webhook is not active');
      return;
    }
    logger.info({ attempt: attempt.id }, 'resending a delivery whose sender stopped');
    const sentAt = attempt.sentAt ?? attempt.scheduledAt;
    // A failure is logged by the dispatcher, which takes the attempt back (takeBack).
    this.dispatcher.dispatch(attempt, webhook, sentAt, { manual: attempt.redelivery }).catch(() => undefined);
  }

  /**
   * `POST /_sandbox/deliveries/:id/redeliver`: the same bytes once more, now, as a new attempt. A
   * manual redelivery neither retries nor changes the webhook's status.
   */
  async redeliver(original: AttemptRecord, now: number): Promise<AttemptRecord> {
    const { db, store, attempts } = this.deps;
    const webhook = await store.findById(db, original.webhookId);
    if (!webhook) throw new Error(`webhook ${original.webhookId} is gone`);
    const id = newId('dlv', now);
    await db.transaction(async (tx) =>
      attempts.insertAttempt(tx, {
        id,
        accountId: original.accountId,
        webhookId: original.webhookId,
        eventId: original.eventId,
        eventType: original.eventType,
        attempt: (await attempts.lastAttemptNumber(tx, original.webhookId, original.eventId)) + 1,
        redelivery: true,
        scheduledAt: now,
        sendingNow: { wallAt: this.realNow(), by: this.deps.scheduler.replica.id },
      }),
    );
    const attempt = (await attempts.findAttempt(db, id)) as AttemptRecord;
    await this.dispatcher.dispatch(attempt, webhook, now, { manual: true });
    return (await attempts.findAttempt(db, id)) as AttemptRecord;
  }

  /** `POST /_sandbox/webhooks/:id/probe`: whether the receiver checks signatures (see probe.ts). */
  probe(webhook: WebhookRecord, now: number): Promise<ProbeOutcome> {
    return probeWebhook(
      {
        ...this.deps,
        dispatch: (attempt, to, sentAt) => this.dispatcher.dispatch(attempt, to, sentAt),
        realNow: () => this.realNow(),
        replicaId: this.deps.scheduler.replica.id,
      },
      webhook,
      now,
    );
  }

  /** The sandbox stops: sends on the wire may finish until `deadline`, then are cut off. */
  drain(deadline: number): Promise<void> {
    return this.dispatcher.drain(deadline);
  }

  /** An attempt falls due: it starts its send, stamped with its due time, and returns at once. */
  private async startSending(attempt: AttemptRecord): Promise<RanJob | undefined> {
    const summary = {
      id: attempt.id,
      kind: WEBHOOK_ATTEMPT,
      subject: attempt.id,
      due_at: formatTimestamp(attempt.scheduledAt),
    };
    const { db, attempts } = this.deps;
    const webhook = await db.transaction(async (tx) => {
      const found = await this.recipientOf(tx, attempt);
      if (!found) {
        await attempts.cancelPending(tx, attempt.webhookId, 'the webhook is not active');
        await attempts.cancelAttempt(tx, attempt.id, 'the webhook is not active');
        return undefined;
      }
      const claimed = await attempts.startSending(
        tx,
        attempt.id,
        attempt.scheduledAt,
        this.realNow(),
        this.deps.scheduler.replica.id,
      );
      return claimed ? found : CLAIMED_ELSEWHERE;
    });
    if (webhook === CLAIMED_ELSEWHERE) return undefined;
    if (!webhook) return { ...summary, skipped: true };
    // A failure is logged by the dispatcher, which takes the attempt back (takeBack).
    this.dispatcher
      .dispatch(attempt, webhook, attempt.scheduledAt, { manual: attempt.redelivery })
      .catch(() => undefined);
    return { ...summary, webhook_id: webhook.id, event_id: attempt.eventId, attempt: attempt.attempt };
  }

  /**
   * The webhook an attempt may still go to: an active one, or for a manual redelivery any but a deleted
   * one (the contract sends those to a failed or disabled webhook, never to a deleted one). A deletion
   * cancels only scheduled attempts: one that was `sending` then, or owed in memory (takeBack), is
   * stopped here when it falls due again.
   */
  private async recipientOf(q: Sql, attempt: AttemptRecord): Promise<WebhookRecord | undefined> {
    const webhook = await this.deps.store.find(q, attempt.accountId, attempt.webhookId);
    return webhook && (webhook.status === 'active' || attempt.redelivery) ? webhook : undefined;
  }

  /**
   * An attempt whose send ended without an outcome written goes back among the scheduled ones, due
   * RESEND_UNSENT_MS later on the account's clock, so that it is sent again without waiting for a
   * restart (as a send cut off by a crash is). Until the database takes that, it is owed, and put
   * back before the account's next due work is looked for. After TAKE_BACKS, it stays `sending`
   * until the next start. A probe is not sent again: whoever asked for it had their answer.
   */
  private async takeBack(attempt: AttemptRecord, sentAt: number): Promise<void> {
    if (attempt.probe !== null) {
      await this.deps.attempts
        .cancelAttempt(this.deps.db, attempt.id, 'the probe could not be sent')
        .catch(() => undefined);
      return;
    }
    const times = (this.takenBack.get(attempt.id) ?? 0) + 1;
    if (times > TAKE_BACKS) {
      this.takenBack.delete(attempt.id);
      this.deps.logger.warn({ attempt: attempt.id }, 'a delivery left sending until the next start');
      return;
    }
    // Counts of attempts long since settled are of no more use: kept at most a few thousand.
    if (this.takenBack.size >= 5_000) this.takenBack.clear();
    this.takenBack.set(attempt.id, times);
    // Counted from the clock's present when it is past the send's stamp: a send made late (a backlog,
    // a take-over after a restart) is stamped with its old due time, and would go out again at once.
    // Within an advance the stored clock still reads where the advance began, behind `sentAt`. A clock
    // that cannot be read leaves the stamp: the attempt must still be taken back.
    const now = await this.deps.nowOf(attempt.accountId).catch(() => undefined);
    const dueAt = Math.max(sentAt, now ?? sentAt) + RESEND_UNSENT_MS;
    this.owe(attempt.accountId, attempt.id, dueAt);
    await this.putBack(attempt.accountId, attempt.id).catch(() => undefined);
    this.deps.scheduler.wakeFor(attempt.accountId, dueAt);
  }

  /**
   * Puts back what is owed of the account. `taking` is the attempt whose send is handing it back now
   * (and so still held): any other that this process holds stays owed until that send lets it go (it
   * is being taken back, or sent again after a put-back written though answered as failed).
   */
  private async putBack(accountId: string, taking?: string): Promise<void> {
    const owed = this.owed.get(accountId);
    if (!owed) return;
    for (const [id, dueAt] of owed) {
      if (id !== taking && this.dispatcher.holds(id)) continue;
      // Taken out before it is written, so that two looks at once never put it back twice.
      owed.delete(id);
      // An account that owes nothing is not looked at (nextDue).
      if (owed.size === 0) this.owed.delete(accountId);
      try {
        await this.deps.attempts.requeue(this.deps.db, id, this.deps.scheduler.replica.id, dueAt);
      } catch (error) {
        // Owed again in the account's map as it is now: this one may have been dropped meanwhile.
        this.owe(accountId, id, dueAt);
        throw error;
      }
    }
  }

  private owe(accountId: string, attemptId: string, dueAt: number): void {
    const owed = this.owed.get(accountId) ?? new Map<string, number>();
    this.owed.set(accountId, owed.set(attemptId, dueAt));
  }

  private realNow(): number {
    return (this.deps.realNow ?? Date.now)();
  }
}
