import type { z } from 'zod';
import type {
  AccountCreatedSchema,
  AccountSchema,
  CreatedKeySchema,
  KeyListSchema,
  RevokedKeySchema,
} from '../accounts/schema.js';
import type { AdvancedClockSchema, ClockSchema } from '../clock/schema.js';
import { SCOPES } from '../core/actor.js';
import { EVENT_TYPES, type EventSchema } from '../events/schema.js';
import type { FaultSchema } from '../faults/schema.js';
import type { JournalEntry } from '../journal/journal.js';
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
/** `GET /_sandbox/shipments`: the newest shipments (no `meta`: it does not page). */
export type ShipmentList = { data: z.infer<typeof ShipmentListSchema>['data'] };
export type Tracking = z.infer<typeof TrackingSchema>;
export type EventEnvelope = z.infer<typeof EventSchema>;
export type EventList = { data: z.infer<typeof EventSchema>[] };
export type WebhookList = z.infer<typeof WebhookListSchema>;
export type Webhook = WebhookList['data'][number];
export type Attempt = z.infer<typeof AttemptSchema>;
export type AttemptList = z.infer<typeof AttemptListSchema>;
export type AccountCreated = z.infer<typeof AccountCreatedSchema>;
export type Account = z.infer<typeof AccountSchema>;
export type KeyList = z.infer<typeof KeyListSchema>;
export type CreatedKey = z.infer<typeof CreatedKeySchema>;
export type RevokedKey = z.infer<typeof RevokedKeySchema>;
export type Fault = z.infer<typeof FaultSchema>;
/** `GET /_sandbox/faults`: a page of rules. */
export type FaultList = { data: Fault[]; meta: { total: number; has_more: boolean } };
export type { JournalEntry };

const EVENT_COUNT = EVENT_TYPES.length;

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

/**
 * What an item that ran did: a tracking step's status, a webhook's or a listen session's attempt and
 * its try, or why it did not.
 */
function ranDetail(item: AdvancedClock['ran'][number]): string {
  if (item.error !== undefined) return `error: ${String(item.error)}`;
  if (item.skipped) return 'skipped';
  if (item.status !== undefined) return [item.status, item.tracking_number].filter(Boolean).join(' ');
  const to = item.webhook_id ?? item.listener_id;
  if (to !== undefined) return `${to} ${item.event_id} try ${item.attempt}`;
  return '';
}

export function formatShipments(list: ShipmentList): string {
  const rows = list.data.map((s) => [s.id, s.status, s.carrier, s.service, s.tracking_number, s.created_at]);
  return table(['ID', 'STATUS', 'CARRIER', 'SERVICE', 'TRACKING', 'CREATED'], rows, 'No shipments yet.');
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

/** A triggered event, and which of the account's webhooks and listen sessions it went to. */
export function formatTriggered(
  event: EventEnvelope,
  subscribed: readonly Webhook[],
  listening: readonly string[] = [],
): string {
  const active = subscribed.filter((webhook) => webhook.status === 'active');
  const sent =
    active.length === 0
      ? ''
      : `Delivering to ${active.map((webhook) => webhook.id).join(', ')}: see \`shipping-sandbox deliveries <webhook-id>\`.\n`;
  const listened = listening.length === 0 ? '' : `Sending to the listen sessions ${listening.join(', ')}.\n`;
  const nowhere = sent || listened ? '' : `${notSentWarning(event.event, subscribed)}\n`;
  return `Triggered ${event.event} as ${event.id} at ${event.created_at}.\n${sent}${listened}${nowhere}`;
}

/** Why a triggered event went nowhere, and what to do about it. */
export function notSentWarning(event: string, subscribed: readonly Webhook[]): string {
  if (subscribed.length === 0)
    return (
      `warning: no webhook is subscribed to ${event}, so it was sent nowhere; subscribe one with ` +
      `\`shipping-sandbox webhooks create <url> --events ${event}\``
    );
  const idle = subscribed.map((webhook) => `${webhook.id} (${webhook.status})`).join(', ');
  return `warning: the webhooks subscribed to ${event} are not active, so it was sent nowhere: ${idle}`;
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
    'No webhooks: register one with `shipping-sandbox webhooks create <url>`.',
  );
}

/** A webhook just registered, and the secret the command made for it (shown only now). */
export function formatWebhookCreated(webhook: Webhook, madeSecret?: string): string {
  const events = webhook.events.length === EVENT_COUNT ? 'every event' : webhook.events.join(', ');
  return [
    `Created ${webhook.id}: ${events} to ${webhook.url}`,
    ...(madeSecret === undefined
      ? []
      : [`Its signing secret (shown only now; the sandbox never shows it again): ${madeSecret}`]),
    '',
  ].join('\n');
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

export function formatKeys(list: KeyList): string {
  return table(
    ['ID', 'NAME', 'SCOPES', 'LAST 4', 'LAST USED', 'REVOKED', 'CREATED'],
    list.data.map((key) => [
      key.id,
      key.name,
      scopesText(key.scopes),
      key.last4,
      key.last_used_at ?? 'never',
      key.revoked_at,
      key.created_at,
    ]),
    'No keys.',
  );
}

export function formatKeyCreated(key: CreatedKey): string {
  return [
    `Created key ${key.id} (${key.name}), scopes: ${scopesText(key.scopes)}.`,
    `Its value (shown only now): ${key.value}`,
    '',
    `  export SHIPPING_SANDBOX_KEY=${key.value}`,
    '',
  ].join('\n');
}

const scopesText = (scopes: readonly string[]) =>
  scopes.length === SCOPES.length ? 'all' : scopes.join(',');

export function formatFaults(list: FaultList): string {
  const rows = list.data.map((f) => [
    f.id,
    f.method ?? 'any',
    f.path,
    faultEffect(f),
    leftText(f),
    f.created_at,
  ]);
  const more = list.meta.has_more
    ? `The newest ${list.data.length} of ${list.meta.total} rules: leave out --limit to see them all.\n`
    : '';
  return `${table(['ID', 'METHOD', 'PATH', 'EFFECT', 'LEFT', 'CREATED'], rows, 'No fault rules.')}${more}`;
}

/** A fault rule on one line: what it matches, what it does, for how long. */
export function formatFault(fault: Fault): string {
  return `${fault.id}: ${fault.method ?? 'any method'} ${fault.path}: ${faultEffect(fault)}; ${leftText(fault)}\n`;
}

function faultEffect(fault: Fault): string {
  const steps: string[] = [];
  if (fault.delay_ms > 0) steps.push(`wait ${fault.delay_ms} ms`);
  if (fault.drop) steps.push('drop the connection');
  if (fault.status !== null)
    steps.push(
      `answer ${fault.status} ${fault.code ?? ''}${fault.retry_after === null ? '' : ` (Retry-After ${fault.retry_after} s)`}`,
    );
  return steps.join(', then ');
}

const leftText = (fault: Fault) => (fault.remaining === null ? 'until deleted' : `${fault.remaining} left`);

/**
 * One request of the journal on one line, as `logs tail` prints it: when (on the account's clock),
 * what, the answer (an error's code and field), how long it took, and its id.
 */
export function formatRequest(entry: JournalEntry): string {
  const answer = entry.status === 0 ? 'dropped' : String(entry.status);
  const error = entry.code === null ? '' : ` ${entry.code}${entry.field === null ? '' : ` (${entry.field})`}`;
  const parts = [
    entry.at,
    `${entry.method} ${entry.path}${entry.query === '' ? '' : `?${entry.query}`}`,
    `${answer}${error}`,
    `${entry.duration_ms} ms`,
    entry.key_revoked ? `revoked key ${entry.key_id}` : undefined,
    entry.id,
  ];
  return `${parts.filter((part) => part !== undefined).join('  ')}\n`;
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
