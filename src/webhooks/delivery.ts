import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { setMaxListeners } from 'node:events';
import pLimit from 'p-limit';
import type { Logger } from 'pino';
import { newId } from '../core/ids.js';
import { isPassingStorageFailure } from '../core/storage-errors.js';
import { formatTimestamp } from '../core/time.js';
import { type Db, transaction } from '../db/database.js';
import type { EventType } from '../events/schema.js';
import type { RecordedEvent } from '../events/store.js';
import type { DueItem, DueQueue, RanJob, UpcomingItem } from '../scheduler/queue.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { DestinationPolicy } from './destinations.js';
import {
  CUT_OFF,
  type DeliveryResult,
  type DeliveryTransport,
  deliveryHeaders,
  type ResolveHost,
  sendDelivery,
} from './send.js';
import { KeyedShares } from './shares.js';
import type { AttemptRecord, ProbeSignature, WebhookRecord, WebhookStore } from './store.js';

/** A delivery's request as it went on the wire. */
export interface SentRequest {
  method: 'POST';
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** How an attempt shows in the summary of a clock advance. */
export const WEBHOOK_ATTEMPT = 'webhook.attempt';

/**
 * Sends on the wire at once: to one webhook, for one account, and across the server. A send takes
 * its webhook's share first, then its account's, then the server's, so one waiting for a wider share
 * holds only slots of its own webhook and account, never one another account could use.
 *
 * A receiver that hangs (or trickles, or refuses) holds at most its webhook's 4 for the timeout. An
 * account whose every receiver hangs holds at most its 16, a sixteenth of the server's 256: other
 * accounts' sends find a free slot at once, unless sixteen accounts hang at the same time (where
 * anyone may create accounts, `--admin-token` is what keeps one tenant from being sixteen). The
 * ceiling bounds what all sends cost together: a socket each, and what is read of an answer stops at
 * 64 KiB, of which 1 KiB is kept.
 */
const SENDS_PER_WEBHOOK = 4;
const SENDS_PER_ACCOUNT = 16;
const SENDS_PER_SERVER = 256;

/**
 * Host name lookups at once. Each lookup through the system resolver occupies one of libuv's four
 * worker threads (which file access needs too) until the name's DNS servers answer or give up: a
 * tenant whose names never answer holds one of them, and other accounts' lookups still run.
 */
const LOOKUPS_PER_ACCOUNT = 1;
const LOOKUPS_PER_SERVER = 3;

/** A probe's two attempts, in the order they are written. */
const PROBE_SIGNATURES: readonly ProbeSignature[] = ['genuine', 'forged'];

/** The system's resolver (`/etc/hosts`, then DNS): every address, in the order the system prefers. */
export const systemResolver: ResolveHost = (hostname) => lookup(hostname, { all: true });

export interface WebhookDeliveryDeps {
  db: Db;
  store: WebhookStore;
  scheduler: Scheduler;
  /** An event's envelope, byte for byte as first recorded (the events module). */
  eventBody: (eventId: string) => string | undefined;
  /** Milliseconds before each retry of the account's deliveries. */
  retryLadderOf: (accountId: string) => readonly number[];
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
  recordTestEvent: (accountId: string, type: EventType, now: number) => RecordedEvent;
  /** The wall clock, for the time each attempt went out (the report shows both clocks). */
  realNow?: () => number;
  logger: Logger;
}

/** What a webhook probe answers: both attempts, each with its outcome. */
export type ProbeOutcome = Record<ProbeSignature, AttemptRecord>;

/**
 * Webhook delivery: the outbox and its dispatcher.
 *
 * An event's attempts are written, `scheduled` and due at once, in the transaction that records the
 * event. The attempts table is itself the scheduler's queue of due deliveries: when an attempt falls
 * due on its account's clock it becomes `sending`, the send starts and the scheduler moves on, so a
 * slow receiver never holds up the scheduler, the API or other receivers. The outcome is written
 * when the receiver answers (or times out), and a failure schedules the next attempt on the
 * account's clock. An attempt left `sending` by a crash is sent again at start, so nothing is lost
 * and nothing is marked delivered without a 2xx.
 */
export class WebhookDelivery implements DueQueue {
  private readonly sendsPerServer = pLimit(SENDS_PER_SERVER);
  private readonly sendsPerAccount = new KeyedShares(SENDS_PER_ACCOUNT);
  private readonly sendsPerWebhook = new KeyedShares(SENDS_PER_WEBHOOK);
  private readonly lookupsPerServer = pLimit(LOOKUPS_PER_SERVER);
  private readonly lookupsPerAccount = new KeyedShares(LOOKUPS_PER_ACCOUNT);
  private readonly inFlight = new Map<string, Set<Promise<unknown>>>();
  /** Set when the sandbox stops: sends still waiting for a slot stay `sending` and go out after the next start. */
  private stopped = false;
  /** Aborted when a stopping sandbox stops waiting for the sends on the wire. */
  private readonly cutOff = new AbortController();

  constructor(private readonly deps: WebhookDeliveryDeps) {
    // Every send on the wire listens for the cut-off, up to the server's share of them at once.
    setMaxListeners(0, this.cutOff.signal);
  }

  /** Called inside the event's transaction: one attempt per subscribed active webhook, due now. */
  fanOut(event: RecordedEvent): void {
    for (const webhook of this.deps.store.subscribers(event.accountId, event.type)) {
      this.scheduleAttempt({
        accountId: event.accountId,
        webhookId: webhook.id,
        eventId: event.id,
        eventType: event.type,
        attempt: 0,
        dueAt: event.createdAt,
        now: event.createdAt,
      });
    }
  }

  private scheduleAttempt(
    attempt: Pick<AttemptRecord, 'accountId' | 'webhookId' | 'eventId' | 'eventType' | 'attempt'> & {
      dueAt: number;
      now: number;
    },
  ): void {
    this.deps.store.insertAttempt({
      id: newId('dlv', attempt.now),
      accountId: attempt.accountId,
      webhookId: attempt.webhookId,
      eventId: attempt.eventId,
      eventType: attempt.eventType,
      attempt: attempt.attempt,
      redelivery: false,
      scheduledAt: attempt.dueAt,
    });
    this.deps.scheduler.wakeFor(attempt.accountId, attempt.dueAt);
  }

  earliestDue(): { accountId: string; dueAt: number }[] {
    return this.deps.store.earliestDue();
  }

  upcoming(accountId: string, limit: number): UpcomingItem[] {
    return this.deps.store.scheduled(accountId, limit).map((attempt) => ({
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

  /**
   * The request an attempt made, as the receiver got it: the URL and signature it was sent with, the
   * headers built as `send.ts` builds them, and the event's bytes. Null until the attempt is sent,
   * and for an attempt that sent nothing (a refused destination).
   */
  sentRequest(attempt: AttemptRecord): SentRequest | null {
    const sent = this.deps.store.sentRequest(attempt.id);
    const body = sent && this.deps.eventBody(attempt.eventId);
    if (!sent || body === undefined) return null;
    const request = { body, eventId: attempt.eventId, attempt: attempt.attempt };
    return {
      method: 'POST',
      url: sent.url,
      headers: deliveryHeaders(new URL(sent.url), request, sent.signature),
      body,
    };
  }

  nextDue(accountId: string, until: number): DueItem | undefined {
    const attempt = this.deps.store.nextDue(accountId, until);
    return attempt && { dueAt: attempt.scheduledAt, order: attempt.seq, run: () => this.start(attempt) };
  }

  /** An attempt falls due: it starts its send, stamped with its due time, and returns at once. */
  private start(attempt: AttemptRecord): RanJob {
    const summary = {
      id: attempt.id,
      kind: WEBHOOK_ATTEMPT,
      subject: attempt.id,
      due_at: formatTimestamp(attempt.scheduledAt),
    };
    const { db, store } = this.deps;
    const webhook = transaction(db, () => {
      const found = store.findById(attempt.webhookId);
      if (found?.status !== 'active') {
        store.cancelPending(attempt.webhookId, 'the webhook is not active');
        store.cancelAttempt(attempt.id, 'the webhook is not active');
        return undefined;
      }
      store.startSending(attempt.id, attempt.scheduledAt, this.realNow());
      return found;
    });
    if (!webhook) return { ...summary, skipped: true };
    this.track(attempt.accountId, this.send(attempt, webhook, attempt.scheduledAt));
    return { ...summary, webhook_id: webhook.id, event_id: attempt.eventId, attempt: attempt.attempt };
  }

  /** Resolves once every send of the account that is on the wire now has its outcome written. */
  async settled(accountId: string): Promise<void> {
    for (let sends = this.inFlight.get(accountId); sends?.size; sends = this.inFlight.get(accountId)) {
      await Promise.allSettled([...sends]);
    }
  }

  /**
   * At start: attempts that were on the wire when the process stopped are sent again, but a probe's:
   * whoever asked for it had their answer cut off, so it is not sent to anyone after the fact.
   */
  resumeInterrupted(): void {
    const { store, logger } = this.deps;
    for (const attempt of store.interrupted()) {
      if (attempt.probe !== null) {
        store.cancelAttempt(attempt.id, 'a probe cut off by a restart is not sent again');
        continue;
      }
      const webhook = store.findById(attempt.webhookId);
      // A manual redelivery goes out whatever the webhook's status; anything else only to an active one.
      if (!webhook || (webhook.status !== 'active' && !attempt.redelivery)) {
        store.cancelAttempt(attempt.id, 'the webhook is not active');
        continue;
      }
      logger.info({ attempt: attempt.id }, 'resending a delivery interrupted by a restart');
      const sentAt = attempt.sentAt ?? attempt.scheduledAt;
      this.track(attempt.accountId, this.send(attempt, webhook, sentAt, { manual: attempt.redelivery }));
    }
  }

  /**
   * `POST /_sandbox/deliveries/:id/redeliver`: the same bytes once more, now, as a new attempt. A
   * manual redelivery neither retries nor changes the webhook's status.
   */
  async redeliver(original: AttemptRecord, now: number): Promise<AttemptRecord> {
    const { store } = this.deps;
    const webhook = store.findById(original.webhookId);
    if (!webhook) throw new Error(`webhook ${original.webhookId} is gone`);
    const id = newId('dlv', now);
    store.insertAttempt({
      id,
      accountId: original.accountId,
      webhookId: original.webhookId,
      eventId: original.eventId,
      eventType: original.eventType,
      attempt: store.lastAttemptNumber(original.webhookId, original.eventId) + 1,
      redelivery: true,
      scheduledAt: now,
      sendingNow: { wallAt: this.realNow() },
    });
    const attempt = store.findAttempt(id) as AttemptRecord;
    await this.track(attempt.accountId, this.send(attempt, webhook, now, { manual: true }));
    return store.findAttempt(id) as AttemptRecord;
  }

  /**
   * `POST /_sandbox/webhooks/:id/probe`: whether the receiver checks signatures. A test event of the
   * webhook's first subscribed type goes to this webhook alone, now, twice: once correctly signed and
   * once signed with a wrong secret (the signature well formed, so only checking it tells them
   * apart), both with `Service-Probe: true`. Each is a fresh event, so a receiver that drops
   * duplicates by event id still judges both. They go through the same sender as every delivery (the
   * destination policy, the shares, the answer's cap) at the same time, and this resolves once both
   * have their outcome. A probe is never retried and never moves the webhook toward `failed`,
   * whatever its status (a failed webhook may be probed to see whether its receiver is fixed).
   */
  async probe(webhook: WebhookRecord, now: number): Promise<ProbeOutcome> {
    const { db, store } = this.deps;
    const type = webhook.events[0] as EventType;
    const wallAt = this.realNow();
    const ids = transaction(db, () =>
      PROBE_SIGNATURES.map((probe) => {
        const event = this.deps.recordTestEvent(webhook.accountId, type, now);
        const id = newId('dlv', now);
        store.insertAttempt({
          id,
          accountId: webhook.accountId,
          webhookId: webhook.id,
          eventId: event.id,
          eventType: type,
          attempt: 0,
          redelivery: false,
          probe,
          scheduledAt: now,
          sendingNow: { wallAt },
        });
        return id;
      }),
    );
    await Promise.all(
      ids.map((id) =>
        this.track(webhook.accountId, this.send(store.findAttempt(id) as AttemptRecord, webhook, now)),
      ),
    );
    const [genuine, forged] = ids.map((id) => store.findAttempt(id) as AttemptRecord);
    return { genuine: genuine as AttemptRecord, forged: forged as AttemptRecord };
  }

  private realNow(): number {
    return (this.deps.realNow ?? Date.now)();
  }

  private track(accountId: string, send: Promise<unknown>): Promise<unknown> {
    let sends = this.inFlight.get(accountId);
    if (!sends) {
      sends = new Set();
      this.inFlight.set(accountId, sends);
    }
    sends.add(send);
    const done = send.finally(() => {
      sends.delete(send);
      if (sends.size === 0 && this.inFlight.get(accountId) === sends) this.inFlight.delete(accountId);
    });
    return done;
  }

  private async send(
    attempt: AttemptRecord,
    webhook: WebhookRecord,
    sentAt: number,
    options = { manual: false },
  ) {
    // The body is read once the send has its slot: a queue of waiting sends holds no envelopes.
    const result = await this.throttled(attempt, async () => {
      if (this.stopped) return undefined;
      const body = this.deps.eventBody(attempt.eventId);
      if (body === undefined) return undefined;
      const request = {
        url: webhook.url,
        // A forged probe is signed with a secret nobody has: well formed, and wrong.
        secret: attempt.probe === 'forged' ? randomBytes(32).toString('hex') : webhook.secret,
        body,
        eventId: attempt.eventId,
        attempt: attempt.attempt,
        timeoutMs: this.deps.timeoutMs,
        probe: attempt.probe !== null,
        cutOff: this.cutOff.signal,
      };
      return sendDelivery(request, this.transportOf(attempt.accountId));
    });
    // A send cut off by a stopping sandbox stays `sending`: it goes out again after the next start.
    if (result === undefined || result === CUT_OFF) return;
    this.deps.logger.info(
      {
        account: attempt.accountId,
        webhook: webhook.id,
        delivery: attempt.id,
        event: attempt.eventType,
        event_id: attempt.eventId,
        attempt: attempt.attempt,
        outcome: result.ok ? 'succeeded' : 'failed',
        response_status: result.responseStatus,
        error: result.error,
        duration_ms: result.durationMs,
      },
      'delivery',
    );
    const writeOutcome = () =>
      transaction(this.deps.db, () => this.settle(attempt, result, sentAt, options.manual));
    try {
      writeOutcome();
    } catch (error) {
      // No room to write it (a full disk): the outcome is kept and written once there is, by the
      // scheduler, which backs off meanwhile; the attempt shows `sending` until then.
      if (isPassingStorageFailure(error)) {
        this.deps.scheduler.retryWrite(attempt.accountId, writeOutcome, error);
        return;
      }
      // The database may be closing under a stopping server; the attempt stays `sending` and is resent.
      this.deps.logger.error({ err: error, attempt: attempt.id }, 'could not record a delivery outcome');
    }
  }

  /**
   * The sandbox stops: nothing more goes on the wire, the sends on it may finish until `deadline`
   * (`performance.now()` milliseconds), and those still waiting for an answer then are cut off. A
   * send cut off has no outcome: its attempt stays `sending` and is sent again at the next start.
   */
  async drain(deadline: number): Promise<void> {
    this.stopped = true;
    const sends = () => [...this.inFlight.values()].flatMap((set) => [...set]);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, deadline - performance.now()));
    });
    await Promise.race([
      late,
      (async () => {
        for (let left = sends(); left.length > 0; left = sends()) await Promise.allSettled(left);
      })(),
    ]);
    clearTimeout(timer);
    this.cutOff.abort();
    await Promise.allSettled(sends());
  }

  /** Runs `send` within its webhook's share, then its account's, then the server's. */
  private throttled<T>(attempt: AttemptRecord, send: () => Promise<T>): Promise<T> {
    return this.sendsPerWebhook.run(attempt.webhookId, () =>
      this.sendsPerAccount.run(attempt.accountId, () => this.sendsPerServer(send)),
    );
  }

  /** The destination policy, and the resolver within the account's share of lookups. */
  private transportOf(accountId: string): DeliveryTransport {
    const resolve = this.deps.resolve ?? systemResolver;
    return {
      destinations: this.deps.destinations,
      resolve: (hostname) =>
        this.lookupsPerAccount.run(accountId, () => this.lookupsPerServer(() => resolve(hostname))),
    };
  }

  /**
   * Writes the outcome; a failure schedules the next rung of the ladder, or fails the webhook. A manual
   * redelivery and a probe have an outcome and nothing more.
   */
  private settle(attempt: AttemptRecord, result: DeliveryResult, sentAt: number, manual: boolean): void {
    const { store } = this.deps;
    if (result.ok || manual || attempt.probe !== null) {
      store.recordResult(attempt.id, result, null);
      return;
    }
    const delay = this.deps.retryLadderOf(attempt.accountId)[attempt.attempt];
    const webhook = store.findById(attempt.webhookId);
    if (delay !== undefined && webhook?.status === 'active') {
      const dueAt = sentAt + delay;
      store.recordResult(attempt.id, result, dueAt);
      this.scheduleAttempt({ ...attempt, attempt: attempt.attempt + 1, dueAt, now: sentAt });
      return;
    }
    store.recordResult(attempt.id, result, null);
    if (delay === undefined && webhook?.status === 'active')
      this.failWebhook(webhook, attempt, result, sentAt);
  }

  /** The specification: after the last retry fails, the webhook is marked failed and the owner is told once. */
  private failWebhook(
    webhook: WebhookRecord,
    attempt: AttemptRecord,
    result: DeliveryResult,
    at: number,
  ): void {
    const { store, logger } = this.deps;
    store.save({ ...webhook, status: 'failed' });
    store.cancelPending(webhook.id, 'the webhook was marked failed');
    store.insertEmail({
      id: newId('eml', at),
      accountId: webhook.accountId,
      recipient: `owner@${webhook.accountId.toLowerCase()}.sandbox.invalid`,
      subject: `Webhook ${webhook.id} was marked failed`,
      body: [
        `Deliveries to ${webhook.url} failed ${attempt.attempt + 1} times in a row for event ${attempt.eventId}`,
        `(${attempt.eventType}); the last try, at ${formatTimestamp(at)}, ended with: ${result.errorMessage ?? result.error}.`,
        '',
        'The webhook is now marked failed and receives no new events.',
        `Fix the receiver, then set it active again: PATCH /v1/webhooks/${webhook.id} {"status": "active"}.`,
      ].join('\n'),
      createdAt: at,
    });
    logger.warn({ webhook: webhook.id, url: webhook.url }, 'webhook marked failed');
  }
}
