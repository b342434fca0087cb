import { idSchema, MoneySchema, TimestampSchema } from '../core/schemas.js';
import { z } from '../core/zod.js';

export const LABEL_FORMATS = ['pdf', 'png', 'zpl'] as const;
export const LABEL_SIZES = ['4x6', '4x8', 'letter'] as const;

export const CreateLabelSchema = z
  .object({
    shipment_id: z.string().min(1, 'must not be empty').max(100).openapi({ example: 'shp_01JD…' }),
    format: z.enum(LABEL_FORMATS).default('pdf').openapi({ description: 'default pdf' }),
    size: z.enum(LABEL_SIZES).default('4x6').openapi({ description: 'default 4x6 (inches)' }),
  })
  .strict()
  .openapi('CreateLabel');

export const LabelSchema = z
  .object({
    id: idSchema('lbl'),
    shipment_id: idSchema('shp'),
    tracking_number: z.string().openapi({ example: '1Z5R89390357567127' }),
    carrier: z.string().openapi({ example: 'ups' }),
    format: z.enum(LABEL_FORMATS),
    label_url: z
      .string()
      .openapi({ description: 'pre-signed download URL, valid 7 days on the account clock' }),
    expires_at: TimestampSchema,
    created_at: TimestampSchema,
    status: z.enum(['active', 'voided']),
  })
  .openapi('Label');

export const RefundSchema = z
  .object({
    amount: MoneySchema.shape.amount,
    currency: MoneySchema.shape.currency,
    estimated_at: TimestampSchema,
  })
  .openapi('Refund');

export const VoidedLabelSchema = z
  .object({ id: idSchema('lbl'), status: z.literal('voided'), refund: RefundSchema })
  .openapi('VoidedLabel');

export type CreateLabelInput = z.infer<typeof CreateLabelSchema>;
export type Label = z.infer<typeof LabelSchema>;
export type VoidedLabel = z.infer<typeof VoidedLabelSchema>;
