import { setTimeout as sleep } from 'node:timers/promises';
import type { Delivery, DeliveryAttempt, DeliveryFilter, EventEnvelope, WebhookEventType } from './types.js';

/** An attempt as the delivery log keeps it. */
export interface LoggedAttempt {
  attempt: DeliveryAttempt;
  /** When it is due on the account clock, in milliseconds (the listed `scheduled_at` drops them). */
  dueAt: number;
  /** Insertion order: the oldest delivery is handed out first. */
  order: number;
}

/** What waiting reads of the account's webhook traffic (the webhooks module's tables, in-process). */
export interface DeliveryLog {
  /** The account's webhooks that are not deleted. */
  webhooks(accountId: string): Promise<{ id: string; events: readonly WebhookEventType[] }[]>;
  attempts(webhookId: string): Promise<LoggedAttempt[]>;
  /** The envelope of an event, as it was sent. */
  envelope(eventId: string): Promise<EventEnvelope | undefined>;
}

export interface WaitParts {
  accountId: string;
  filter: DeliveryFilter;
  log: DeliveryLog;
  /** `webhook event` pairs earlier calls resolved with; the one this call resolves with is added. */
  handedOut: Set<string>;
  /** The account clock's present, in milliseconds (whole seconds). */
  clockNow(): Promise<number>;
  /** `POST /_sandbox/clock/advance`: runs what falls due and waits for the sends it starts. */
  advanceBy(seconds: number): Promise<unknown>;
}

const DEFAULT_TIMEOUT_MS = 5000;
/**
 * While no matching delivery exists yet (the event has not happened), the log is looked at again
 * this often, until the timeout: nothing in the sandbox announces a new attempt, and one appears only
 * when the test or the account clock makes the event happen.
 */
const IDLE_LOOK_MS = 10;
const OUTCOMES = new Set<DeliveryAttempt['status']>(['succeeded', 'failed', 'cancelled']);
const UNDER_WAY = new Set<DeliveryAttempt['status']>(['scheduled', 'sending']);

/**
 * Waits for a delivery matching the filter to have an outcome. A matching attempt that is due (now, or
 * later: a retry) is not waited for in real time: the account clock is moved to it, which runs it and
 * waits for its send, so a retry an hour ahead takes no longer than the first try.
 */
export async function waitForDelivery(parts: WaitParts): Promise<Delivery> {
  const { filter, log, accountId, handedOut } = parts;
  const timeout = filter.timeout ?? DEFAULT_TIMEOUT_MS;
  if (typeof timeout !== 'number' || !(timeout >= 0))
    throw new TypeError(`waitForDelivery: timeout must be a number of milliseconds, not ${String(timeout)}.`);
  const until = filter.until ?? 'final';
  if (until !== 'final' && until !== 'succeeded')
    throw new TypeError(`waitForDelivery: until must be 'final' or 'succeeded', not ${String(until)}.`);

  const webhooks = (await log.webhooks(accountId)).filter(
    (w) => filter.webhookId === undefined || w.id === filter.webhookId,
  );
  if (!webhooks.some((w) => filter.event === undefined || w.events.includes(filter.event))) {
    throw new Error(
      `waitForDelivery: no webhook of this account${filter.webhookId ? ` with id ${filter.webhookId}` : ''}` +
        `${filter.event ? ` subscribes to ${filter.event}` : ''}, so no delivery can come. Register one first.`,
    );
  }

  // Each event's envelope, read once, before the attempts that carry it are looked at.
  const envelopes = new Map<string, EventEnvelope>();
  const readEnvelopes = async (groups: Group[]) => {
    for (const { attempt } of groups.flatMap((group) => group.attempts)) {
      if (envelopes.has(attempt.event_id)) continue;
      envelopes.set(
        attempt.event_id,
        (await log.envelope(attempt.event_id)) ?? {
          id: attempt.event_id,
          event: attempt.event,
          created_at: attempt.scheduled_at,
          data: null,
        },
      );
    }
  };
  const delivery = ({ attempt }: LoggedAttempt): Delivery => ({
    ...attempt,
    payload: envelopes.get(attempt.event_id) as EventEnvelope,
  });

  const deadline = performance.now() + timeout;
  for (;;) {
    const groups = await groupsOf(webhooks, log, filter, handedOut);
    await readEnvelopes(groups);
    const look = lookAt(groups, until, filter.where, delivery);
    if (look.found) {
      handedOut.add(look.found.key);
      return delivery(look.found.attempt);
    }
    if (look.exhausted && !look.next) {
      const last = look.exhausted.attempt;
      throw new Error(
        `waitForDelivery: the delivery of ${last.event} ${last.event_id} to ${last.webhook_id} failed on every try; ` +
          `the last, attempt ${last.attempt}, ${describe(last)}.`,
      );
    }
    const remaining = deadline - performance.now();
    if (remaining <= 0) throw timedOut(filter, timeout, look.seen);
    if (look.next) {
      const by = Math.max(0, Math.ceil((look.next.dueAt - (await parts.clockNow())) / 1000));
      await withinDeadline(parts.advanceBy(by), remaining, () => timedOut(filter, timeout, look.seen));
    } else {
      await sleep(Math.min(IDLE_LOOK_MS, remaining));
    }
  }
}

interface Group {
  key: string;
  /** By attempt number. */
  attempts: LoggedAttempt[];
}

/** The matching attempts not handed out yet, by `webhook event`, oldest delivery first. */
async function groupsOf(
  webhooks: { id: string }[],
  log: DeliveryLog,
  filter: DeliveryFilter,
  handedOut: ReadonlySet<string>,
): Promise<Group[]> {
  const groups = new Map<string, Group>();
  for (const webhook of webhooks) {
    for (const logged of await log.attempts(webhook.id)) {
      const { attempt } = logged;
      if (filter.event !== undefined && attempt.event !== filter.event) continue;
      if (filter.eventId !== undefined && attempt.event_id !== filter.eventId) continue;
      const key = `${attempt.webhook_id} ${attempt.event_id}`;
      if (handedOut.has(key)) continue;
      const group = groups.get(key);
      if (group) group.attempts.push(logged);
      else groups.set(key, { key, attempts: [logged] });
    }
  }
  const oldest = (group: Group) => Math.min(...group.attempts.map((a) => a.order));
  return [...groups.values()]
    .map((group) => ({ ...group, attempts: group.attempts.sort((a, b) => a.order - b.order) }))
    .sort((a, b) => oldest(a) - oldest(b));
}

interface Look {
  found?: { key: string; attempt: LoggedAttempt };
  /** The earliest matching attempt still under way: the clock is moved to it. */
  next?: LoggedAttempt;
  /** Waiting for a success, a delivery whose tries are all over. */
  exhausted?: LoggedAttempt;
  seen: LoggedAttempt[];
}

function lookAt(
  groups: Group[],
  until: 'final' | 'succeeded',
  where: DeliveryFilter['where'],
  delivery: (logged: LoggedAttempt) => Delivery,
): Look {
  const look: Look = { seen: [] };
  for (const group of groups) {
    const matching = group.attempts.filter((logged) => !where || where(delivery(logged)));
    look.seen.push(...matching);
    const done = matching.find(({ attempt }) =>
      until === 'final' ? OUTCOMES.has(attempt.status) : attempt.status === 'succeeded',
    );
    if (done) return { ...look, found: { key: group.key, attempt: done } };
    for (const logged of matching) {
      if (UNDER_WAY.has(logged.attempt.status) && (!look.next || logged.dueAt < look.next.dueAt))
        look.next = logged;
    }
    const last = matching.at(-1);
    if (last && !UNDER_WAY.has(last.attempt.status) && last.attempt.next_attempt_at === null)
      look.exhausted ??= last;
  }
  return look;
}

function describe(attempt: DeliveryAttempt): string {
  if (attempt.status === 'scheduled') return `scheduled for ${attempt.scheduled_at}`;
  if (attempt.status === 'sending') return 'still sending';
  if (attempt.status === 'succeeded') return `succeeded with ${attempt.response_status}`;
  const reason = attempt.error_message ?? attempt.error ?? 'no reason given';
  // The reason often names the answer already ("the receiver answered 500").
  const status = attempt.response_status;
  const answer = status === null || reason.includes(String(status)) ? '' : ` (answer ${status})`;
  return `${attempt.status}: ${reason}${answer}`;
}

function timedOut(filter: DeliveryFilter, timeout: number, seen: LoggedAttempt[]): Error {
  const what = filter.event ?? 'any event';
  const saw = seen.length
    ? `It saw: ${seen.map(({ attempt: a }) => `${a.event} ${a.event_id} to ${a.webhook_id}, attempt ${a.attempt} ${describe(a)}`).join('; ')}.`
    : 'No matching delivery exists yet: make the event happen (advanceShipment, clock.advance) or check the filter.';
  return new Error(`waitForDelivery: no delivery of ${what} had an outcome within ${timeout} ms. ${saw}`);
}

/** The work's own result, or the deadline's error if that comes first (the work goes on unheard). */
async function withinDeadline<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  work.catch(() => undefined);
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
