import type { components } from './schema.js';

/**
 * The document's schemas under the names a merchant's code uses. They are the generated types
 * (`schema.ts`), so they follow the API whenever the client is generated again.
 */
type Schemas = components['schemas'];

export type Address = Schemas['Address'];
export type Parcel = Schemas['Parcel'];
export type Money = Schemas['Money'];

export type Shipment = Schemas['Shipment'];
export type ShipmentStatus = Shipment['status'];
export type CreateShipmentRequest = Schemas['CreateShipment'];
export type ShipmentList = Schemas['ShipmentList'];
export type CancelledShipment = Schemas['CancelledShipment'];

export type Rate = Schemas['Rate'];
export type RatesRequest = Schemas['RatesRequest'];

export type Label = Schemas['Label'];
export type CreateLabelRequest = Schemas['CreateLabel'];
export type VoidedLabel = Schemas['VoidedLabel'];

export type TrackingRecord = Schemas['Tracking'];
export type TrackingEvent = Schemas['TrackingEvent'];
export type TrackingStatus = TrackingRecord['status'];

export type Webhook = Schemas['Webhook'];
export type CreateWebhookRequest = Schemas['CreateWebhook'];
export type UpdateWebhookRequest = Schemas['UpdateWebhook'];
export type DeliveryAttempt = Schemas['DeliveryAttempt'];

export type Account = Schemas['Account'];
export type Clock = Schemas['Clock'];

/** The body of every error answer: `{error: {code, message, field?}}`. */
export type ApiError = Schemas['Error'];
/** Every code the sandbox answers with (a fault rule may set a code of its own). */
export type ErrorCode = Schemas['ErrorCode'];

/** Any webhook delivery's body: the envelope `{id, event, created_at, data}` of one of the seven events. */
export type WebhookEvent = Schemas['WebhookEvent'];
export type WebhookEventType = WebhookEvent['event'];
/** The body of one event's delivery: `WebhookPayload<'tracking.delivered'>`. */
export type WebhookPayload<E extends WebhookEventType = WebhookEventType> = Extract<
  WebhookEvent,
  { event: E }
>;
/** One event's `data`: `WebhookData<'label.voided'>` is the void's answer and its `shipment_id`. */
export type WebhookData<E extends WebhookEventType = WebhookEventType> = WebhookPayload<E>['data'];
