import { AddressSchema, ParcelSchema } from '../addresses/schema.js';
import { MoneySchema } from '../core/schemas.js';
import { z } from '../core/zod.js';

export const RateSchema = z
  .object({
    carrier: z.string().openapi({ example: 'usps', description: 'carrier slug' }),
    service: z.string().openapi({ example: 'ground_advantage', description: 'service code of that carrier' }),
    rate: MoneySchema,
    estimated_days: z.number().int().positive().openapi({ example: 4, description: 'transit days' }),
  })
  .openapi('Rate');

export const RatesRequestSchema = z
  .object({ from: AddressSchema, to: AddressSchema, parcel: ParcelSchema })
  .strict()
  .openapi('RatesRequest');

export const RateListSchema = z
  .object({ data: z.array(RateSchema).openapi({ description: 'cheapest first' }) })
  .openapi('RateList');

export type Rate = z.infer<typeof RateSchema>;
export type RatesRequest = z.infer<typeof RatesRequestSchema>;
