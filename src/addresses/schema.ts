import { z } from '../core/zod.js';

/**
 * The addresses and the parcel that every quote and every shipment take: their shapes and their
 * bounds. The bounds fill in what the specification leaves "not shown": generous enough for real
 * addresses and parcels, tight enough to catch the mistakes a client makes (grams sent as
 * kilograms, a whole address pasted into one field). docs/behaviour.md lists them.
 */
export const ADDRESS_LIMITS = { text: 100, state: 50, zip: 20 } as const;
export const PARCEL_LIMITS = { maxWeightGrams: 70_000, maxDimensionCm: 300 } as const;

const text = (max: number) =>
  z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

export const AddressSchema = z
  .object({
    name: text(ADDRESS_LIMITS.text).openapi({ example: 'Ada Lovelace' }),
    company: text(ADDRESS_LIMITS.text).optional().openapi({ example: 'Analytical Engines Ltd' }),
    address1: text(ADDRESS_LIMITS.text).openapi({ example: '417 Montgomery St' }),
    address2: text(ADDRESS_LIMITS.text).optional().openapi({ example: 'Floor 5' }),
    city: text(ADDRESS_LIMITS.text).openapi({ example: 'San Francisco' }),
    state: text(ADDRESS_LIMITS.state).openapi({ example: 'CA' }),
    zip: text(ADDRESS_LIMITS.zip).openapi({ example: '94104' }),
    country: z
      .string()
      .regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 code in upper case, for example US')
      .openapi({ example: 'US' }),
  })
  .strict()
  .openapi('Address');

const dimension = (unit: 'grams' | 'centimeters', max: number) =>
  z
    .number()
    .int('must be a whole number')
    .positive('must be positive')
    .max(max, `must be at most ${max} ${unit}`);

export const ParcelSchema = z
  .object({
    weight: dimension('grams', PARCEL_LIMITS.maxWeightGrams).openapi({ example: 1200, description: 'grams' }),
    length: dimension('centimeters', PARCEL_LIMITS.maxDimensionCm).openapi({
      example: 30,
      description: 'cm',
    }),
    width: dimension('centimeters', PARCEL_LIMITS.maxDimensionCm).openapi({ example: 20, description: 'cm' }),
    height: dimension('centimeters', PARCEL_LIMITS.maxDimensionCm).openapi({
      example: 10,
      description: 'cm',
    }),
  })
  .strict()
  .openapi('Parcel');

export type Address = z.infer<typeof AddressSchema>;
export type Parcel = z.infer<typeof ParcelSchema>;
