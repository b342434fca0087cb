import { TimestampSchema } from '../core/schemas.js';
import { z } from '../core/zod.js';

/**
 * The checks, in the order the report lists them: the contract's six, then the sandbox's own. Each
 * id names what a well-behaved client does; docs/report.md says when each passes and fails.
 */
export const CHECK_IDS = [
  'respects_retry_after',
  'verifies_signatures',
  'webhook_handler_succeeds',
  'webhook_handler_fast',
  'refreshes_label_urls',
  'uses_valid_keys',
  'relies_on_tracking_webhooks',
  'checks_before_retrying',
  'does_not_repeat_rejected_requests',
] as const;
export type CheckId = (typeof CHECK_IDS)[number];

export const CHECK_STATUSES = ['pass', 'fail', 'not_observed'] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];

export const EVIDENCE_KINDS = ['request', 'delivery', 'label_url'] as const;

export const EvidenceSchema = z
  .object({
    kind: z.enum(EVIDENCE_KINDS).openapi({
      description:
        'what `id` names: a request of GET /_sandbox/requests, a delivery attempt of GET /_sandbox/webhooks/:id/deliveries, or a label whose pre-signed URL was fetched',
    }),
    id: z.string().openapi({ example: 'req_01JD…' }),
    at: TimestampSchema.nullable().openapi({ description: "when it happened, on the account's clock" }),
    wall_at: TimestampSchema.nullable().openapi({ description: 'when it happened, by the wall clock' }),
    detail: z.string().openapi({ description: 'one line: what this piece of evidence shows' }),
    method: z.string().optional().openapi({ description: 'request: its method' }),
    path: z.string().optional().openapi({ description: 'request: its path' }),
    key_id: z.string().optional().openapi({ description: 'request: the key it came with' }),
    response_status: z
      .number()
      .int()
      .nullable()
      .optional()
      .openapi({ description: 'request or delivery: the status answered (null: no answer)' }),
    webhook_id: z.string().optional().openapi({ description: 'delivery: its webhook' }),
    event_id: z.string().optional().openapi({ description: 'delivery: its event' }),
    event: z.string().optional().openapi({ description: "delivery: its event's type" }),
    duration_ms: z
      .number()
      .int()
      .nullable()
      .optional()
      .openapi({ description: "delivery: real milliseconds until the receiver's answer" }),
    probe_signature: z
      .enum(['genuine', 'forged'])
      .nullable()
      .optional()
      .openapi({ description: "delivery: a probe's signature; null for other deliveries" }),
    expires_at: TimestampSchema.optional().openapi({ description: 'label_url: when the URL expired' }),
    shipment_id: z.string().optional().openapi({ description: "label_url: the label's shipment" }),
  })
  .openapi('ReportEvidence');
export type Evidence = z.infer<typeof EvidenceSchema>;

export const CheckSchema = z
  .object({
    id: z.enum(CHECK_IDS),
    title: z.string().openapi({ description: 'what a well-behaved client does, in words' }),
    status: z.enum(CHECK_STATUSES).openapi({
      description: '`not_observed` when the sandbox has seen nothing yet that this check could judge',
    }),
    summary: z.string().openapi({
      description:
        'one line a developer can act on: what happened, what the live service would do, what to change',
    }),
    counts: z
      .object({
        passed: z.number().int().openapi({ description: 'occurrences judged well-behaved' }),
        failed: z.number().int().openapi({ description: 'occurrences judged failing' }),
      })
      .openapi({ description: 'how many occurrences were judged; the evidence shows the first few' }),
    evidence: z.array(EvidenceSchema),
  })
  .openapi('ReportCheck');
export type Check = z.infer<typeof CheckSchema>;

export const ReportSchema = z
  .object({
    account_id: z.string(),
    generated_at: TimestampSchema.openapi({ description: "on the account's clock" }),
    generated_wall_at: TimestampSchema.openapi({ description: 'by the wall clock' }),
    status: z.enum(CHECK_STATUSES).openapi({
      description: '`fail` when any check fails; `pass` when none fails and at least one passes',
    }),
    checks: z.array(CheckSchema),
  })
  .openapi('IntegrationReport');
export type Report = z.infer<typeof ReportSchema>;

export const ReportQuerySchema = z.object({
  format: z
    .enum(['json', 'junit'])
    .optional()
    .openapi({
      param: { name: 'format', in: 'query' },
      example: 'junit',
      description:
        '`json` (the default), or `junit`: a JUnit XML document for CI systems that show test reports',
    }),
});
