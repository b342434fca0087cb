import { z } from 'zod';

/**
 * Schemas every resource shares: timestamps, money and the error body. Plain zod: `meta` carries what
 * the OpenAPI document shows (`id` names a component), so the core needs no HTTP framework.
 */
export const TimestampSchema = z.string().meta({ example: '2026-11-22T08:23:14Z', format: 'date-time' });

export const MoneySchema = z
  .object({
    amount: z.string().meta({ example: '12.40', description: 'decimal string with two decimals' }),
    currency: z.string().meta({ example: 'USD' }),
  })
  .meta({ id: 'Money' });

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ example: 'invalid_address' }),
      message: z.string(),
      field: z.string().optional().meta({ example: 'to.zip' }),
    }),
  })
  .meta({ id: 'Error' });
