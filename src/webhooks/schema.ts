import { LIST_PAGE_SIZE } from '../core/paging.js';
import { idSchema, PageMetaSchema, pageQuery, TimestampSchema } from '../core/schemas.js';
import { z } from '../core/zod.js';
import { EVENT_TYPES } from '../events/schema.js';

export const SECRET_LENGTH = { min: 16, max: 256 } as const;
export const URL_MAX_LENGTH = 2048;

const url = z
  .string()
  .max(URL_MAX_LENGTH, `must be at most ${URL_MAX_LENGTH} characters`)
  .openapi({ example: 'https://shop.example.com/hooks/shipping' });
const events = z
  .array(z.enum(EVENT_TYPES))
  .min(1, 'must name at least one event')
  .refine((list) => new Set(list).size === list.length, 'must not name an event twice')
  .openapi({ example: ['tracking.updated', 'tracking.delivered'] });
const secret = z
  .string()
  .min(SECRET_LENGTH.min, `must be at least ${SECRET_LENGTH.min} characters`)
  .max(SECRET_LENGTH.max, `must be at most ${SECRET_LENGTH.max} characters`)
  .openapi({ example: 'whsec_a-long-random-string' });

export const CreateWebhookSchema = z.object({ url, events, secret }).strict().openapi('CreateWebhook');

export const UpdateWebhookSchema = z
  .object({
    url: url.optional(),
    events: events.optional(),
    secret: secret.optional(),
    status: z
      .enum(['active', 'disabled'])
      .optional()
      .openapi({ description: 'active again after failing, or disabled' }),
  })
  .strict()
  .openapi('UpdateWebhook');

export const WebhookSchema = z
  .object({
    id: idSchema('wh'),
    url: z.string(),
    events: z.array(z.enum(EVENT_TYPES)),
    status: z.enum(['active', 'failed', 'disabled']),
    created_at: TimestampSchema,
  })
  .openapi('Webhook');

export const WebhookListSchema = z
  .object({ data: z.array(WebhookSchema), meta: PageMetaSchema })
  .openapi('WebhookList');

/** `GET /v1/webhooks` pages as `GET /v1/shipments` does. */
export const ListWebhooksQuerySchema = z.object(pageQuery(LIST_PAGE_SIZE));

export const DeletedWebhookSchema = z
  .object({ id: idSchema('wh'), deleted: z.literal(true) })
  .openapi('DeletedWebhook');

export const AttemptSchema = z
  .object({
    id: z.string().openapi({ example: 'dlv_01JD…' }),
    webhook_id: z.string(),
    event_id: z.string(),
    event: z.enum(EVENT_TYPES),
    attempt: z.number().int().openapi({ description: '0 for the first try, then 1 to 5 for the retries' }),
    redelivery: z.boolean().openapi({ description: 'sent by POST /_sandbox/deliveries/:id/redeliver' }),
    probe: z.boolean().openapi({
      description:
        "sent by POST /_sandbox/webhooks/:id/probe: never retried, never moves the webhook toward failed, counted only by the report's verifies_signatures",
    }),
    probe_signature: z.enum(['genuine', 'forged']).nullable().openapi({
      description:
        "a probe's signature: correct (genuine) or deliberately wrong (forged); null for other deliveries",
    }),
    status: z.enum(['scheduled', 'sending', 'succeeded', 'failed', 'cancelled']),
    scheduled_at: TimestampSchema,
    sent_at: TimestampSchema.nullable(),
    response_status: z.number().int().nullable(),
    response_excerpt: z.string().nullable().openapi({
      description:
        'the first 1 KiB of the answer (the sandbox reads at most 64 KiB of an answer, then closes the connection)',
    }),
    duration_ms: z.number().int().nullable().openapi({ description: 'real milliseconds on the wire' }),
    error: z.enum(['timeout', 'connection', 'http', 'destination_not_allowed']).nullable().openapi({
      description:
        'why the attempt failed: no answer in time, no connection, a non-2xx answer (redirects are not followed), or a destination the sandbox refuses (the host resolved to an address its --webhook-targets policy refuses; nothing was sent)',
    }),
    error_message: z.string().nullable(),
    next_attempt_at: TimestampSchema.nullable(),
  })
  .openapi('DeliveryAttempt');

export const SentAttemptSchema = AttemptSchema.extend({
  request: z
    .object({
      method: z.literal('POST'),
      url: z.string(),
      headers: z.record(z.string(), z.string()).openapi({
        description: 'as sent, Service-Signature included',
        example: {
          'content-type': 'application/json',
          'service-signature': 'sha256=5d41…',
          'service-event-id': 'evt_01JD…',
          'service-delivery-attempt': '0',
        },
      }),
      body: z.string().openapi({ description: "the event's envelope, byte for byte as sent" }),
    })
    .nullable()
    .openapi({
      description:
        'the request as the receiver got it: its URL and signature as they were then (the webhook may have changed since); null until sent, and when nothing was sent (a refused destination)',
    }),
}).openapi('DeliveryAttemptInFull');

export const AttemptListSchema = z.object({ data: z.array(AttemptSchema) }).openapi('DeliveryAttemptList');

const ProbeAttemptSchema = z.object({
  delivery_id: z.string().openapi({ description: 'the attempt in GET /_sandbox/webhooks/:id/deliveries' }),
  response_status: z
    .number()
    .int()
    .nullable()
    .openapi({ description: "the receiver's status; null when it did not answer" }),
  error: z.enum(['timeout', 'connection', 'http', 'destination_not_allowed']).nullable(),
  duration_ms: z.number().int().nullable(),
});

export const ProbeResultSchema = z
  .object({
    genuine: ProbeAttemptSchema.openapi({ description: 'the correctly signed delivery' }),
    forged: ProbeAttemptSchema.openapi({ description: 'the delivery with a wrong signature' }),
    verifies_signatures: z.boolean().openapi({
      description:
        'true when the receiver accepted (2xx) the genuine delivery and refused the forged one; false otherwise',
    }),
  })
  .openapi('WebhookProbe');

export type CreateWebhookInput = z.infer<typeof CreateWebhookSchema>;
export type UpdateWebhookInput = z.infer<typeof UpdateWebhookSchema>;
