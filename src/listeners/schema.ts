import { idSchema, TimestampSchema } from '../core/schemas.js';
import { z } from '../core/zod.js';
import { EVENT_TYPES } from '../events/schema.js';
import { AttemptSchema, URL_MAX_LENGTH } from '../webhooks/schema.js';

/** The heartbeat the stream sends by default, and what the command reads two missed ones as. */
export const HEARTBEAT_MS = 15_000;
/** How long a session outlives its connection: a reconnect within it loses nothing. */
export const GRACE_MS = 10_000;

const events = z
  .array(z.enum(EVENT_TYPES))
  .min(1, 'must name at least one event')
  .refine((list) => new Set(list).size === list.length, 'must not name an event twice')
  .openapi({ example: ['shipment.created', 'label.generated'] });

export const OpenListenerSchema = z
  .object({
    forward_to: z
      .string()
      .max(URL_MAX_LENGTH, `must be at most ${URL_MAX_LENGTH} characters`)
      .nullable()
      .optional()
      .openapi({
        example: 'http://localhost:3000/webhooks',
        description:
          'where the command forwards each delivery, from its own machine: the sandbox never connects ' +
          'to it, so the webhook destination policy does not apply. Absent or null: the command only prints them.',
      }),
    events: events.optional().openapi({ description: 'the events to receive; all seven when absent' }),
  })
  .strict()
  .openapi('OpenListener');

export const ListenerSchema = z
  .object({
    id: idSchema('lsn'),
    forward_to: z.string().nullable(),
    events: z.array(z.enum(EVENT_TYPES)),
    connected_at: TimestampSchema.openapi({ description: 'when the session was opened' }),
    connected: z.boolean().openapi({
      description:
        'whether a connection holds it now; false in the 10 s after its connection closed, while a ' +
        'reconnect may still take it up',
    }),
  })
  .openapi('Listener');

export const ListenerListSchema = z.object({ data: z.array(ListenerSchema) }).openapi('ListenerList');

export const ListenerSecretSchema = z
  .object({
    secret: z.string().openapi({
      example: 'whsec_3mZ0d1k…',
      description:
        "the account's listen signing secret: every session of the account signs with it; it changes only when the account is reset",
    }),
  })
  .openapi('ListenerSecret');

const ListenerErrorSchema = z
  .enum(['timeout', 'connection', 'http', 'destination_not_allowed', 'listener_gone'])
  .nullable()
  .openapi({
    description:
      'why the attempt failed: as reported by the command (no answer in time, no connection, a non-2xx ' +
      'answer, a destination it refused), or `listener_gone`: the session ended (10 s after its ' +
      'connection closed) before the attempt had an answer; it is not retried',
  });

export const ListenerDeliverySchema = AttemptSchema.omit({
  webhook_id: true,
  redelivery: true,
  probe: true,
  probe_signature: true,
})
  .extend({
    listener_id: idSchema('lsn'),
    status: z.enum(['scheduled', 'sending', 'succeeded', 'failed']).openapi({
      description:
        '`sending`: handed to the session, the command has not reported the answer yet (it is sent again after a reconnect)',
    }),
    duration_ms: z
      .number()
      .int()
      .nullable()
      .openapi({ description: 'real milliseconds the forward took, as the command measured them' }),
    error: ListenerErrorSchema,
  })
  .openapi('ListenerDelivery');

export const ListenerDeliveryListSchema = z
  .object({ data: z.array(ListenerDeliverySchema) })
  .openapi('ListenerDeliveryList');

export const DeliveryOutcomeSchema = z
  .object({
    // Three digits, as an HTTP status line may carry: a receiver's odd 799 is its answer all the same.
    response_status: z.number().int().min(100).max(999).nullable().openapi({
      description:
        "the receiver's status; null when it did not answer (then `error` says why), or when the command only prints",
    }),
    response_excerpt: z
      .string()
      .max(64 * 1024)
      .nullable()
      .optional()
      .openapi({ description: 'the start of the answer; the sandbox keeps its first 1 KiB' }),
    duration_ms: z.number().int().min(0).max(3_600_000).openapi({ description: 'real milliseconds' }),
    error: z
      .enum(['timeout', 'connection', 'http', 'destination_not_allowed'])
      .nullable()
      .optional()
      .openapi({
        description: 'why the forward failed, as webhook deliveries say it; absent or null when answered',
      }),
    error_message: z.string().max(2000).nullable().optional(),
  })
  .strict()
  .openapi('ListenerDeliveryOutcome');

/** The stream's first event, on every connection: the session and how to take part in it. */
export const ReadyMessageSchema = z
  .object({
    id: idSchema('lsn'),
    forward_to: z.string().nullable(),
    events: z.array(z.enum(EVENT_TYPES)),
    secret: z
      .string()
      .openapi({ description: 'the listen signing secret the command signs each forward with' }),
    heartbeat_ms: z.number().int().openapi({ description: 'how often the stream sends a heartbeat' }),
    timeout_ms: z
      .number()
      .int()
      .openapi({ description: 'how long a forward may wait for its answer: the webhook timeout' }),
  })
  .openapi('ListenerReady');

/** One delivery down the stream: what the command POSTs to `forward_to`. */
export const DeliveryMessageSchema = z
  .object({
    id: z.string().openapi({ example: 'dlv_01JD…', description: 'the attempt; the same when sent again' }),
    listener_id: idSchema('lsn'),
    // Checked by the command, which sends it on as a header (`Service-Event-Id`).
    event_id: z.string().regex(/^evt_[0-9A-Za-z_-]+$/),
    event: z.enum(EVENT_TYPES),
    attempt: z
      .number()
      .int()
      .openapi({ description: '`Service-Delivery-Attempt`: 0, then 1, 2, … for retries' }),
    sent_at: TimestampSchema,
    body: z.string().openapi({ description: "the event's envelope, the exact bytes to send" }),
  })
  .openapi('ListenerDeliveryMessage');

/** `event: ended`: why the sandbox ended the session under the stream (a reset). */
export const EndedMessageSchema = z.object({ reason: z.string() });

export type OpenListenerInput = z.infer<typeof OpenListenerSchema>;
export type DeliveryOutcomeInput = z.infer<typeof DeliveryOutcomeSchema>;
export type ReadyMessage = z.infer<typeof ReadyMessageSchema>;
export type DeliveryMessage = z.infer<typeof DeliveryMessageSchema>;
export type ListenerDelivery = z.infer<typeof ListenerDeliverySchema>;
