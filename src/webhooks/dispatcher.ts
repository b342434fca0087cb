import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { WorkMetrics } from '../core/metrics.js';
import { isPassingStorageFailure } from '../core/storage-errors.js';
import type { Sql } from '../db/sql.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { AttemptRecord } from './attempt-store.js';
import type { DestinationPolicy } from './destinations.js';
import { SharedResolver } from './dns.js';
import { CUT_OFF, type DeliveryResult, type ResolveHost, sendDelivery } from './send.js';
import { SendLimits, SharedSendShares } from './send-limits.js';
import type { WebhookRecord } from './store.js';

/** How long past its timeout a send still counts against the shares of sends on the wire. */
const SLOT_MARGIN_MS = 5_000;

/**
 * The sends of one webhook this process holds at once, on the wire or waiting for a slot: four times
 * its share of the wire (send-limits.ts), enough to keep that share busy. Its other due attempts stay
 * `scheduled` in the database, which is the queue, and are taken as its sends end. Without a bound, a
 * receiver that hangs while thousands of events fall due would have them all held in memory.
 */
export const SENDS_HELD_PER_WEBHOOK = 16;

export interface DeliveryDispatcherDeps {
  db: Sql;
  scheduler: Scheduler;
  /** An event's envelope, byte for byte as first recorded (the events module). */
  eventBody: (eventId: string) => Promise<string | undefined>;
  /** How long a receiver may take to answer, in real time. */
  timeoutMs: number;
  /** Where webhooks may deliver (`--webhook-targets`, `--webhook-allow-host`). */
  destinations: DestinationPolicy;
  /** Resolves a receiver's host name to all its addresses; the system's resolver unless a test says. */
  resolve?: ResolveHost;
  /** Writes an attempt's outcome, inside the transaction the dispatcher opens for it (the outbox). */
  settle: (
    tx: Sql,
    attempt: AttemptRecord,
    result: DeliveryResult,
    sentAt: number,
    manual: boolean,
  ) => Promise<void>;
  /**
   * Takes back an attempt whose send ended without an outcome written (its event unreadable, no slot
   * to be had, the outcome refused by the database), to go out again later (delivery.ts).
   */
  unsent: (attempt: AttemptRecord, sentAt: number) => Promise<void>;
  logger: Logger;
  /** Counts each attempt's outcome for `/metrics`. */
  metrics: WorkMetrics;
}

/**
 * Puts attempts on the wire, within the send limits, and writes each outcome when the receiver
 * answers (or times out). It keeps the sends of each account that are on the wire, so that an
 * advance can wait for them (`settled`) and a stopping sandbox can let them finish (`drain`).
 */
export class DeliveryDispatcher {
  private readonly limits: SendLimits;
  private readonly resolver: SharedResolver;
  private readonly inFlight = new Map<string, Set<Promise<unknown>>>();
  /**
   * The attempts whose send this process holds: waiting for a slot, on the wire, or writing the
   * outcome. One of its own `sending` attempts that is not here has nothing more coming: its outcome
   * could not be written (or is kept for when there is room), or its send failed before it had one.
   */
  private readonly holding = new Set<string>();
  /** By webhook: its account and how many of its sends this process holds. */
  private readonly held = new Map<string, { accountId: string; sends: number }>();
  /** By account: advances waiting for a held-up webhook of it to have room. */
  private readonly roomWaiters = new Map<string, (() => void)[]>();
  /** Set when the sandbox stops: sends still waiting for a slot stay `sending` and go out after the next start. */
  private stopped = false;
  /** Aborted when a stopping sandbox stops waiting for the sends on the wire. */
  private readonly cutOff = new AbortController();

  constructor(private readonly deps: DeliveryDispatcherDeps) {
    this.resolver = new SharedResolver(deps.resolve);
    // Over SQLite this process is the only sender: its own shares are all there is to count.
    this.limits = new SendLimits(
      deps.db.engine === 'postgres'
        ? new SharedSendShares(deps.db, deps.timeoutMs + SLOT_MARGIN_MS)
        : undefined,
    );
    // Every send on the wire listens for the cut-off, up to the server's share of them at once.
    setMaxListeners(0, this.cutOff.signal);
  }

  /**
   * Sends the attempt (already `sending`) and writes its outcome; resolves once it is written, or
   * once the send is cut off. `sentAt` is when it went out on the account's clock. Rejects when the
   * send failed before it had an outcome (its event unreadable, a slot not to be had), once the
   * attempt is handed to `unsent`.
   */
  dispatch(
    attempt: AttemptRecord,
    webhook: WebhookRecord,
    sentAt: number,
    options = { manual: false },
  ): Promise<unknown> {
    this.hold(attempt);
    const send = this.send(attempt, webhook, sentAt, options)
      .catch(async (error: unknown) => {
        this.deps.logger.error({ err: error, attempt: attempt.id }, 'could not send a delivery');
        if (!this.stopped) await this.deps.unsent(attempt, sentAt);
        throw error;
      })
      .finally(() => this.letGo(attempt));
    return this.track(attempt.accountId, send);
  }

  /**
   * By account, the webhooks that hold `SENDS_HELD_PER_WEBHOOK` sends: their due attempts wait in the
   * database until one of those sends ends.
   */
  heldUp(): Map<string, Set<string>> {
    const byAccount = new Map<string, Set<string>>();
    for (const [webhookId, held] of this.held) {
      if (held.sends < SENDS_HELD_PER_WEBHOOK) continue;
      const webhooks = byAccount.get(held.accountId) ?? new Set();
      byAccount.set(held.accountId, webhooks.add(webhookId));
    }
    return byAccount;
  }

  /** Whether the webhook holds `SENDS_HELD_PER_WEBHOOK` sends here. */
  holdsAllItMay(webhookId: string): boolean {
    return (this.held.get(webhookId)?.sends ?? 0) >= SENDS_HELD_PER_WEBHOOK;
  }

  private hold(attempt: AttemptRecord): void {
    this.holding.add(attempt.id);
    const held = this.held.get(attempt.webhookId);
    if (held) held.sends++;
    else this.held.set(attempt.webhookId, { accountId: attempt.accountId, sends: 1 });
  }

  private letGo(attempt: AttemptRecord): void {
    this.holding.delete(attempt.id);
    const held = this.held.get(attempt.webhookId);
    if (!held) return;
    held.sends--;
    if (held.sends === 0) this.held.delete(attempt.webhookId);
    if (held.sends !== SENDS_HELD_PER_WEBHOOK - 1) return;
    // The webhook had to wait: what fell due for it meanwhile can be taken now.
    for (const wake of this.roomWaiters.get(held.accountId) ?? []) wake();
    this.roomWaiters.delete(held.accountId);
    this.deps.scheduler.runSoon(held.accountId);
  }

  /** Whether this process holds a send of the attempt (see `holding`). */
  holds(attemptId: string): boolean {
    return this.holding.has(attemptId);
  }

  /** Whether the sandbox is stopping: what is still `sending` then waits for the next start. */
  get stopping(): boolean {
    return this.stopped;
  }

  /**
   * True once every send of the account that is on the wire now has its outcome written; false as
   * soon as one of its webhooks that held as many sends as it may has room for the next.
   */
  async settled(accountId: string): Promise<boolean> {
    for (let sends = this.inFlight.get(accountId); sends?.size; sends = this.inFlight.get(accountId)) {
      const all = Promise.allSettled([...sends]).then(() => true);
      if (!this.heldUp().has(accountId)) await all;
      else if (!(await Promise.race([all, this.room(accountId)]))) return false;
    }
    return true;
  }

  /** Resolves with false once a held-up webhook of the account has room (see `letGo`). */
  private room(accountId: string): Promise<false> {
    return new Promise((resolve) => {
      const waiting = this.roomWaiters.get(accountId) ?? [];
      this.roomWaiters.set(accountId, [...waiting, () => resolve(false)]);
    });
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
    options: { manual: boolean },
  ) {
    // The body is read once the send has its slot: a queue of waiting sends holds no envelopes.
    const result = await this.limits.run(
      attempt,
      async () => {
        const body = await this.deps.eventBody(attempt.eventId);
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
        const transport = {
          destinations: this.deps.destinations,
          resolve: this.resolver.forAccount(attempt.accountId),
        };
        return sendDelivery(request, transport);
      },
      () => this.stopped,
    );
    // A send cut off by a stopping sandbox stays `sending`: it goes out again after the next start.
    if (result === undefined || result === CUT_OFF) return;
    this.deps.metrics.webhookAttempt(result);
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
    // Refused for a reason that will not pass, now or when kept for later: taken back, since the
    // scheduler would drop the write and leave the attempt `sending` for good.
    const writeOutcome = async () => {
      try {
        await this.deps.db.transaction((tx) => this.deps.settle(tx, attempt, result, sentAt, options.manual));
      } catch (error) {
        if (isPassingStorageFailure(error)) throw error;
        this.deps.logger.error({ err: error, attempt: attempt.id }, 'could not record a delivery outcome');
        // The database may be closing under a stopping server: the attempt stays `sending` and is
        // resent after the next start.
        if (!this.stopped) await this.deps.unsent(attempt, sentAt);
      }
    };
    try {
      await writeOutcome();
    } catch (error) {
      // No room to write it (a full disk): the outcome is kept and written once there is, by the
      // scheduler, which backs off meanwhile; the attempt shows `sending` until then.
      this.deps.scheduler.retryWrite(attempt.accountId, writeOutcome, error);
    }
  }
}
