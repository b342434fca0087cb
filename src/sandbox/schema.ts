import { z } from '@hono/zod-openapi';
import { PLANS } from '../accounts/plans.js';
import { MAX_CLOCK_SPEED } from '../clock/clock.js';
import { TimestampSchema } from '../core/schemas.js';
import { EVENT_TYPES } from '../events/store.js';

export const CreateAccountSchema = z
  .object({
    name: z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters').optional(),
    plan: z.enum(PLANS).optional().openapi({ description: 'default growth' }),
  })
  .strict()
  .openapi('CreateAccount');

export const AccountCreatedSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    plan: z.enum(PLANS),
    created_at: TimestampSchema,
    api_key: z.string().openapi({ description: 'an all-scopes test key; shown only here' }),
  })
  .openapi('AccountCreated');

export const ClockSchema = z
  .object({ now: TimestampSchema, speed: z.number(), frozen: z.boolean() })
  .openapi('Clock');

export const ClockSettingsSchema = z
  .object({
    speed: z
      .number()
      .positive('must be greater than 0')
      .max(MAX_CLOCK_SPEED, `must be at most ${MAX_CLOCK_SPEED}`)
      .optional()
      .openapi({ example: 3600, description: '1 = real time; 3600 = an hour a second' }),
    frozen: z.boolean().optional(),
  })
  .strict()
  .openapi('ClockSettings');

const Duration = z
  .union([z.number(), z.string()])
  .openapi({ example: '2h', description: 'seconds, or a string such as "90s", "5m", "2h", "3d"' });

export const AdvanceClockSchema = z
  .object({ by: Duration.optional(), to: TimestampSchema.optional() })
  .strict()
  .openapi('AdvanceClock', { description: 'exactly one of `by` and `to`' });

export const AdvancedClockSchema = ClockSchema.extend({
  ran: z.array(z.object({ kind: z.string(), due_at: TimestampSchema }).passthrough()),
}).openapi('AdvancedClock');

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

export const AccountSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    plan: z.enum(PLANS),
    default_scenario: z.string().openapi({ description: 'the scenario a new label starts' }),
    webhook_retry_schedule: z
      .array(z.number())
      .openapi({ description: 'seconds before each webhook retry; the server ladder unless set' }),
    rate_limits: z.boolean().openapi({ description: 'whether the plan and key ceilings are enforced' }),
    created_at: TimestampSchema,
  })
  .openapi('Account');

export const AccountSettingsSchema = z
  .object({
    plan: z.enum(PLANS).optional(),
    default_scenario: z.string().min(1, 'must not be empty').optional().openapi({ example: 'express' }),
    webhook_retry_schedule: z
      .array(z.union([z.number(), z.string()]))
      .max(20, 'must have at most 20 delays')
      .nullable()
      .optional()
      .openapi({
        example: ['10s', '1m'],
        description: 'delays before each retry; null restores the server ladder',
      }),
    rate_limits: z
      .boolean()
      .optional()
      .openapi({ description: 'false switches rate limiting off for this account' }),
  })
  .strict()
  .openapi('AccountSettings');
