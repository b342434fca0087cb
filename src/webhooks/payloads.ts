import { TimestampSchema } from '../core/schemas.js';
import { z } from '../core/zod.js';
import type { EventType } from '../events/schema.js';
import { LabelSchema, VoidedLabelSchema } from '../labels/schema.js';
import { CancelledShipmentSchema, ShipmentSchema } from '../shipments/schema.js';
import { TrackingDeliveredSchema, TrackingSchema } from '../tracking/schema.js';

/**
 * What a webhook receiver gets: the envelope `{id, event, created_at, data}` of each of the seven
 * events, its `data` described by the very schemas the routes answer with, so a payload's type cannot
 * drift from the API's. The OpenAPI document's `webhooks` section is made of these, and the typed
 * client exports them (`WebhookEvent`, `WebhookPayload<'tracking.delivered'>`).
 */
const envelope = <E extends EventType, D extends z.ZodType>(event: E, data: D, name: string, when: string) =>
  z
    .object({
      id: z.string().openapi({
        example: 'evt_01JD3S5Z7QK2N8W4X6Y9A0B1C2',
        description: 'the same on every retry of this event: receivers drop duplicates by it',
      }),
      event: z.literal(event),
      created_at: TimestampSchema,
      data,
    })
    .openapi(name, { description: `Sent ${when}.` });

/** `label.voided` carries the void's answer and the shipment it belonged to. */
export const LabelVoidedDataSchema = VoidedLabelSchema.extend({ shipment_id: z.string() }).openapi(
  'LabelVoidedData',
);

export const ShipmentCreatedEventSchema = envelope(
  'shipment.created',
  ShipmentSchema,
  'ShipmentCreatedEvent',
  'when a shipment is created; `data` is the Shipment',
);
export const ShipmentCancelledEventSchema = envelope(
  'shipment.cancelled',
  CancelledShipmentSchema,
  'ShipmentCancelledEvent',
  'when a shipment is cancelled; `data` is the answer of `DELETE /shipments/{id}`',
);
export const LabelGeneratedEventSchema = envelope(
  'label.generated',
  LabelSchema,
  'LabelGeneratedEvent',
  'when a label is generated; `data` is the Label',
);
export const LabelVoidedEventSchema = envelope(
  'label.voided',
  LabelVoidedDataSchema,
  'LabelVoidedEvent',
  'when a label is voided (also when its shipment is cancelled); `data` is the answer of `DELETE /labels/{id}` and the `shipment_id`',
);
export const TrackingUpdatedEventSchema = envelope(
  'tracking.updated',
  TrackingSchema,
  'TrackingUpdatedEvent',
  'for every new tracking event of a parcel; `data` is the Tracking record',
);
export const TrackingDeliveredEventSchema = envelope(
  'tracking.delivered',
  TrackingDeliveredSchema,
  'TrackingDeliveredEvent',
  'when a parcel is delivered (after its `tracking.updated`)',
);
export const TrackingExceptionEventSchema = envelope(
  'tracking.exception',
  TrackingSchema,
  'TrackingExceptionEvent',
  'when a parcel meets an exception (after its `tracking.updated`); `data` is the Tracking record',
);

/** Each event's envelope, by event name. */
export const WEBHOOK_PAYLOADS = {
  'shipment.created': ShipmentCreatedEventSchema,
  'shipment.cancelled': ShipmentCancelledEventSchema,
  'label.generated': LabelGeneratedEventSchema,
  'label.voided': LabelVoidedEventSchema,
  'tracking.updated': TrackingUpdatedEventSchema,
  'tracking.delivered': TrackingDeliveredEventSchema,
  'tracking.exception': TrackingExceptionEventSchema,
} as const satisfies Record<EventType, z.ZodType>;

/** Any event envelope, told apart by `event`. */
export const WebhookEventSchema = z
  .discriminatedUnion('event', [
    ShipmentCreatedEventSchema,
    ShipmentCancelledEventSchema,
    LabelGeneratedEventSchema,
    LabelVoidedEventSchema,
    TrackingUpdatedEventSchema,
    TrackingDeliveredEventSchema,
    TrackingExceptionEventSchema,
  ])
  .openapi('WebhookEvent');

/** The headers of every delivery. */
export const DeliveryHeadersSchema = z.object({
  'Service-Signature': z.string().openapi({
    example: 'sha256=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd',
    description:
      '`sha256=` and the lowercase hex HMAC-SHA256 of the exact bytes of the body, keyed with the ' +
      "webhook's secret. Check it over the raw body before parsing it (the client's `verifySignature`).",
  }),
  'Service-Event-Id': z.string().openapi({
    example: 'evt_01JD3S5Z7QK2N8W4X6Y9A0B1C2',
    description: "the event's `id`, the same on every retry",
  }),
  'Service-Delivery-Attempt': z.string().openapi({
    type: 'integer',
    minimum: 0,
    example: 0,
    description: '0 for the first try, then 1, 2, … for each retry and redelivery',
  }),
});
