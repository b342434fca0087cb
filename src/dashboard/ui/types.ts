/**
 * The API's answers as the dashboard reads them: the OpenAPI document's own schemas, through the
 * types generated from it for the typed client (`src/client/schema.ts`, `npm run generate:client`).
 * Only types come from there, and a type import leaves nothing in the page's bundle.
 */
import type { components } from '../../client/schema.js';
import type {
  Label,
  Rate,
  Shipment,
  ShipmentStatus,
  TrackingEvent,
  TrackingStatus,
  Webhook,
  WebhookEventType,
} from '../../client/types.js';

export type { Label, Rate, Shipment, ShipmentStatus, TrackingEvent, TrackingStatus, Webhook };

type Schemas = components['schemas'];

export type Address = Schemas['Address'];
export type ParcelOverview = Schemas['ParcelOverview'];
export type Scenario = Schemas['ScenarioList']['data'][number];
export type Attempt = Schemas['DeliveryAttempt'];
export type AttemptInFull = Schemas['DeliveryAttemptInFull'];
export type DueItem = Schemas['DueList']['data'][number];
export type Account = Schemas['Account'];
export type Key = Schemas['ApiKey'];
export type Scope = Key['scopes'][number];
export type Email = Schemas['EmailList']['data'][number];
export type Fault = Schemas['Fault'];
export type JournalEntry = Schemas['JournalEntry'];
export type ProbeResult = Schemas['WebhookProbe'];
export type Listener = Schemas['Listener'];
export type ListenerDelivery = Schemas['ListenerDelivery'];
export type Report = Schemas['IntegrationReport'];
export type Check = Schemas['ReportCheck'];
export type CheckStatus = Check['status'];
export type Evidence = Schemas['ReportEvidence'];
export type Clock = Schemas['Clock'];
export type AdvancedClock = Schemas['AdvancedClock'];

/** A list answer of the controls: `{data: [...]}`. */
export interface List<T> {
  data: T[];
}

/** A paged list's answer (webhooks, fault rules): a page and its `meta`. */
export interface Page<T> extends List<T> {
  meta: Schemas['WebhookList']['meta'];
}

/**
 * The largest page a list gives: one page holds every webhook or fault rule an account may have, so a
 * screen reads one page and says so when an account holds more (made before the caps).
 */
export const WHOLE_PAGE = 100;

/**
 * Every member of a union of strings, as a list to draw choices from: the compiler refuses a list that
 * misses a member or names one the API does not have, so the lists below follow the document.
 */
const everyOf =
  <T extends string>() =>
  <const L extends readonly T[]>(list: L & ([T] extends [L[number]] ? unknown : 'misses a member')) =>
    list;

export const SHIPMENT_STATUSES = everyOf<ShipmentStatus>()([
  'created',
  'label_generated',
  'in_transit',
  'delivered',
  'cancelled',
]);

export const EVENT_TYPES = everyOf<WebhookEventType>()([
  'shipment.created',
  'shipment.cancelled',
  'label.generated',
  'label.voided',
  'tracking.updated',
  'tracking.delivered',
  'tracking.exception',
]);

export const SCOPES = everyOf<Scope>()([
  'shipments:read',
  'shipments:write',
  'rates:read',
  'orders:read',
  'billing:read',
]);
