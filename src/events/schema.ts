import { limitParam, TimestampSchema } from '../core/schemas.js';
import { z } from '../core/zod.js';

/** The event names of the specification. */
export const EVENT_TYPES = [
  'shipment.created',
  'shipment.cancelled',
  'label.generated',
  'label.voided',
  'tracking.updated',
  'tracking.delivered',
  'tracking.exception',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The envelope of the specification, exactly as a webhook receiver gets it. */
export interface EventEnvelope {
  id: string;
  event: EventType;
  created_at: string;
  data: unknown;
}

/**
 * Any envelope, its `data` left open. The wiring gives the event routes the webhooks module's union
 * of the seven envelopes instead, which describes each event's `data`; this module sits below the
 * resources whose schemas that needs.
 */
export const EventSchema = z
  .object({ id: z.string(), event: z.enum(EVENT_TYPES), created_at: TimestampSchema, data: z.unknown() })
  .openapi('Event');

export const EVENT_LIST_LIMIT = { default: 100, max: 1000 };

export const EventListQuerySchema = z.object({
  // Read as text, so an unknown name gets the contract's own message (400 invalid_parameter).
  event: z
    .string()
    .optional()
    .openapi({ param: { name: 'event', in: 'query' }, enum: [...EVENT_TYPES], example: 'shipment.created' }),
  limit: limitParam(EVENT_LIST_LIMIT),
});

export const TriggerSchema = z
  .object({ event: z.enum(EVENT_TYPES).openapi({ example: 'tracking.delivered' }) })
  .strict()
  .openapi('TriggerEvent');
