import { MAX_CLOCK_SPEED } from '../core/clock.js';
import { limitParam, TimestampSchema } from '../core/schemas.js';
import { z } from '../core/zod.js';

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

export const DUE_LIST_LIMIT = { default: 20, max: 100 } as const;

export const DueListQuerySchema = z.object({ limit: limitParam(DUE_LIST_LIMIT) });

export const DueListSchema = z
  .object({
    data: z.array(
      z.object({
        id: z.string().openapi({ description: 'the job, or the delivery attempt' }),
        kind: z
          .string()
          .openapi({ example: 'tracking.step', description: '`tracking.step` or `webhook.attempt`' }),
        subject: z.string().openapi({ description: 'the label a step moves, or the delivery attempt' }),
        due_at: TimestampSchema,
        detail: z.record(z.string(), z.unknown()).openapi({
          description:
            "what it will do: a step's label_id, scenario, status, description and location; an attempt's webhook_id, event_id, event and attempt number",
        }),
      }),
    ),
  })
  .openapi('DueList');
