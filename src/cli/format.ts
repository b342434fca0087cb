import type { z } from 'zod';
import type { AccountCreatedSchema } from '../accounts/schema.js';
import type { AdvancedClockSchema, ClockSchema } from '../clock/schema.js';
import type { EventSchema } from '../events/schema.js';
import type { ShipmentListSchema } from '../shipments/schema.js';
import type { TrackingSchema } from '../tracking/schema.js';
import type { AttemptListSchema, AttemptSchema, WebhookListSchema } from '../webhooks/schema.js';
import { table } from './output.js';

/**
 * The readable form of each answer, for a person's terminal. Pure functions of the sandbox's JSON,
 * so they are tested without a terminal.
 */

export type Clock = z.infer<typeof ClockSchema>;
export type AdvancedClock = z.infer<typeof AdvancedClockSchema>;
export type ShipmentList = z.infer<typeof ShipmentListSchema>;
export type Tracking = z.infer<typeof TrackingSchema>;
export type EventEnvelope = z.infer<typeof EventSchema>;
export type EventList = { data: z.infer<typeof EventSchema>[] };
export type WebhookList = z.infer<typeof WebhookListSchema>;
export type Attempt = z.infer<typeof AttemptSchema>;
export type AttemptList = z.infer<typeof AttemptListSchema>;
export type AccountCreated = z.infer<typeof AccountCreatedSchema>;

/** `POST /_sandbox/shipments/:id/scenario` (its schema is private to its routes). */
export interface ScenarioStarted {
  shipment_id: string;
  tracking_number: string;
  scenario: string;
  steps: { status: string; description: string; location: string; occurred_at: string }[];
}

/** `GET /_sandbox/scenarios`. */
export interface ScenarioList {
  data: { name: string; description: string; steps: { after: number; status: string }[] }[];
}

/** `GET /_sandbox/emails`. */
export interface EmailList {
  data: { id: string; to: string; subject: string; body: string; created_at: string }[];
}

export function formatClock(clock: Clock): string {
  const pace = clock.frozen
    ? 'frozen'
    : clock.speed === 1
      ? 'running at real time'
      : `running at ${clock.speed}x real time`;
  return `${clock.now}  ${pace}\n`;
}

export function formatAdvancedClock(clock: AdvancedClock): string {
  if (clock.ran.length === 0) return `${formatClock(clock)}Nothing fell due on the way.\n`;
  const rows = clock.ran.map((item) => [item.due_at, item.kind, String(item.subject), ranDetail(item)]);
  return `${formatClock(clock)}Ran ${plural(clock.ran.length, 'item')} due on the way:\n${indent(
    table(['DUE', 'KIND', 'SUBJECT', 'WHAT'], rows),
  )}`;
}

/** What an item that ran did: a tracking step's status, a webhook attempt's try, or why it did not. */
function ranDetail(item: AdvancedClock['ran'][number]): string {
  if (item.error !== undefined) return `error: ${String(item.error)}`;
  if (item.skipped) return 'skipped';
  if (item.status !== undefined) return [item.status, item.tracking_number].filter(Boolean).join(' ');
  if (item.webhook_id !== undefined) return `${item.webhook_id} ${item.event_id} try ${item.attempt}`;
  return '';
}

export function formatShipments(list: ShipmentList): string {
  const rows = list.data.map((s) => [s.id, s.status, s.carrier, s.service, s.tracking_number, s.created_at]);
  const shown = `${list.data.length} of ${list.meta.total}${list.meta.has_more ? ' (newest first; --limit for more)' : ''}`;
  return `${table(['ID', 'STATUS', 'CARRIER', 'SERVICE', 'TRACKING', 'CREATED'], rows, 'No shipments yet.')}${list.data.length > 0 ? `${shown}\n` : ''}`;
}

export function formatTracking(tracking: Tracking): string {
  const rows = tracking.events.map((e) => [e.occurred_at, e.status, e.location, e.description]);
  return (
    `${tracking.tracking_number} (${tracking.carrier})  ${tracking.status}, estimated delivery ${tracking.estimated_delivery}\n` +
    indent(table(['WHEN', 'STATUS', 'WHERE', 'WHAT'], rows, 'No tracking events yet.'))
  );
}

export function formatScenarioStarted(started: ScenarioStarted): string {
  const rows = started.steps.map((s) => [s.occurred_at, s.status, s.location, s.description]);
  return (
    `${started.shipment_id} (${started.tracking_number}) now plays ${started.scenario}:\n` +
    indent(table(['WHEN', 'STATUS', 'WHERE', 'WHAT'], rows, 'No steps left to play.'))
  );
}

export function formatScenarios(list: ScenarioList): string {
  const rows = list.data.map((s) => [s.name, s.steps.length, s.steps.at(-1)?.status, s.description]);
  return table(['NAME', 'STEPS', 'ENDS', 'DESCRIPTION'], rows, 'No scenarios.');
}

export function formatTriggered(event: EventEnvelope): string {
  return (
    `Triggered ${event.event} as ${event.id} at ${event.created_at}.\n` +
    'Webhooks subscribed to it get it now: see `shipping-sandbox deliveries <webhook-id>`.\n'
  );
}

export function formatEvents(list: EventList): string {
  return table(
    ['CREATED', 'EVENT', 'ID'],
    list.data.map((e) => [e.created_at, e.event, e.id]),
    'No events yet.',
  );
}

export function formatWebhooks(list: WebhookList): string {
  return table(
    ['ID', 'STATUS', 'EVENTS', 'URL'],
    list.data.map((w) => [w.id, w.status, w.events.join(','), w.url]),
    'No webhooks: register one with POST /v1/webhooks.',
  );
}

export function formatAttempts(list: AttemptList): string {
  return table(
    ['ID', 'EVENT', 'EVENT ID', 'TRY', 'STATUS', 'ANSWER', 'MS', 'SENT', 'NEXT TRY'],
    list.data.map((a) => [
      a.id,
      a.event,
      a.event_id,
      tryText(a),
      a.status,
      answerText(a),
      a.duration_ms,
      a.sent_at,
      a.next_attempt_at,
    ]),
    'No deliveries yet.',
  );
}

/** One attempt on one line: a redelivery's answer, and each line `listen` prints. */
export function formatAttempt(attempt: Attempt): string {
  const parts = [
    attempt.sent_at ?? attempt.scheduled_at,
    attempt.event,
    attempt.event_id,
    `-> ${attempt.webhook_id}`,
    `try ${tryText(attempt)}`,
    attempt.status,
    answerText(attempt),
    attempt.duration_ms === null ? undefined : `${attempt.duration_ms} ms`,
    attempt.next_attempt_at === null ? undefined : `next try ${attempt.next_attempt_at}`,
    attempt.id,
  ];
  return `${parts.filter((part) => part !== undefined && part !== '').join('  ')}\n`;
}

export function formatEmails(list: EmailList): string {
  if (list.data.length === 0) return 'No e-mails.\n';
  return list.data
    .map((e) => `${e.created_at}  to ${e.to}\n${e.subject}\n${indent(`${e.body}\n`)}`)
    .join('\n');
}

export function formatAccountCreated(account: AccountCreated): string {
  return [
    `Created ${account.plan} account ${account.id} (${account.name}).`,
    `Its key (shown only now): ${account.api_key}`,
    '',
    `  export SHIPPING_SANDBOX_KEY=${account.api_key}`,
    '',
  ].join('\n');
}

function tryText(attempt: Attempt): string {
  return `${attempt.attempt}${attempt.redelivery ? ' (redelivery)' : ''}`;
}

/** The receiver's answer, or why there was none. */
function answerText(attempt: Attempt): string {
  if (attempt.response_status !== null) return String(attempt.response_status);
  return attempt.error ?? '';
}

export function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? line : `  ${line}`))
    .join('\n');
}

export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
