import { z } from '@hono/zod-openapi';

/** Schemas shared by every resource: money, timestamps and the error body. */
export const TimestampSchema = z.string().openapi({ example: '2026-11-22T08:23:14Z', format: 'date-time' });

export const MoneySchema = z
  .object({
    amount: z.string().openapi({ example: '12.40', description: 'decimal string with two decimals' }),
    currency: z.string().openapi({ example: 'USD' }),
  })
  .openapi('Money');

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: 'invalid_address' }),
      message: z.string(),
      field: z.string().optional().openapi({ example: 'to.zip' }),
    }),
  })
  .openapi('Error');

export type Money = z.infer<typeof MoneySchema>;

/** Formats an integer number of cents as the contract's Money. */
export function money(cents: number, currency: string): Money {
  return { amount: (cents / 100).toFixed(2), currency };
}
