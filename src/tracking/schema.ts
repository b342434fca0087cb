import { TimestampSchema } from '../core/schemas.js';
import { z } from '../core/zod.js';
import { TRACKING_STATUSES } from '../scenarios/vocabulary.js';

export const TrackingStatusSchema = z.enum(TRACKING_STATUSES);

export const TrackingEventSchema = z
  .object({
    status: TrackingStatusSchema,
    description: z.string().openapi({ example: 'Arrived at Facility' }),
    location: z.string().openapi({ example: 'Memphis, TN, US' }),
    occurred_at: TimestampSchema,
  })
  .openapi('TrackingEvent');

export const TrackingSchema = z
  .object({
    tracking_number: z.string(),
    carrier: z.string(),
    status: TrackingStatusSchema,
    estimated_delivery: TimestampSchema,
    events: z.array(TrackingEventSchema).openapi({ description: 'newest first' }),
  })
  .openapi('Tracking');

export const TrackingNumberParam = z.object({
  tracking_number: z
    .string()
    .openapi({ param: { name: 'tracking_number', in: 'path' }, example: '9400100000000000000150' }),
});

/** The data of `tracking.delivered`, as the specification shows it: the delivery itself, no history. */
export const TrackingDeliveredSchema = z
  .object({
    tracking_number: z.string().openapi({ example: '9400100000000000000150' }),
    carrier: z.string().openapi({ example: 'usps' }),
    status: z.literal('delivered'),
    delivered_at: TimestampSchema,
  })
  .openapi('TrackingDelivered');

export type TrackingDelivered = z.infer<typeof TrackingDeliveredSchema>;
