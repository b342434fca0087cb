import { z } from '@hono/zod-openapi';
import { TimestampSchema } from '../core/schemas.js';

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

export const EventSchema = z
  .object({ id: z.string(), event: z.enum(EVENT_TYPES), created_at: TimestampSchema, data: z.unknown() })
  .openapi('Event');

export const EventListQuerySchema = z.object({
  event: z
    .string()
    .optional()
    .openapi({ param: { name: 'event', in: 'query' }, example: 'shipment.created' }),
  limit: z
    .string()
    .optional()
    .openapi({ param: { name: 'limit', in: 'query' }, example: '100' }),
});

export const EventListSchema = z.object({ data: z.array(EventSchema) }).openapi('EventList');

export const TriggerSchema = z
  .object({ event: z.enum(EVENT_TYPES).openapi({ example: 'tracking.delivered' }) })
  .strict()
  .openapi('TriggerEvent');
