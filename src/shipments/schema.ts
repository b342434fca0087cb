import { z } from '@hono/zod-openapi';
import { MoneySchema, TimestampSchema } from '../core/schemas.js';

/**
 * Bounds the specification leaves "not shown". They are generous enough for real addresses and
 * parcels and tight enough to catch the mistakes a client makes (grams sent as kilograms, a
 * whole address pasted into one field). The README lists them.
 */
export const ADDRESS_LIMITS = { text: 100, state: 50, zip: 20 } as const;
export const PARCEL_LIMITS = { maxWeightGrams: 70_000, maxDimensionCm: 300 } as const;
export const REFERENCE_MAX_LENGTH = 100;

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

export const CreateShipmentSchema = z
  .object({
    carrier: z
      .string()
      .min(1)
      .max(50)
      .optional()
      .openapi({ example: 'ups', description: 'omit for the cheapest' }),
    service: z
      .string()
      .min(1)
      .max(50)
      .optional()
      .openapi({ example: 'ground', description: 'omit for the cheapest' }),
    from: AddressSchema,
    to: AddressSchema,
    parcel: ParcelSchema,
    reference: z.string().max(REFERENCE_MAX_LENGTH).optional().openapi({ example: 'order-1042' }),
  })
  .strict()
  .openapi('CreateShipment');

export const ShipmentStatusSchema = z.enum([
  'created',
  'label_generated',
  'in_transit',
  'delivered',
  'cancelled',
]);

export const ShipmentSchema = z
  .object({
    id: z.string().openapi({ example: 'shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2' }),
    status: ShipmentStatusSchema,
    carrier: z.string(),
    service: z.string(),
    rate: MoneySchema,
    from: AddressSchema,
    to: AddressSchema,
    parcel: ParcelSchema,
    reference: z.string().nullable(),
    tracking_number: z.string().nullable(),
    label_id: z.string().nullable(),
    created_at: TimestampSchema,
    cancelled_at: TimestampSchema.nullable(),
  })
  .openapi('Shipment');

export const CancelledShipmentSchema = z
  .object({ id: z.string(), status: z.literal('cancelled'), cancelled_at: TimestampSchema })
  .openapi('CancelledShipment');

export const ListShipmentsQuerySchema = z.object({
  limit: z
    .string()
    .optional()
    .openapi({ param: { name: 'limit', in: 'query' }, example: '20' }),
  cursor: z
    .string()
    .optional()
    .openapi({ param: { name: 'cursor', in: 'query' } }),
  status: ShipmentStatusSchema.optional().openapi({ param: { name: 'status', in: 'query' } }),
  carrier: z
    .string()
    .optional()
    .openapi({ param: { name: 'carrier', in: 'query' } }),
});

export const ShipmentListSchema = z
  .object({
    data: z.array(ShipmentSchema),
    meta: z.object({ total: z.number().int(), cursor: z.string().nullable(), has_more: z.boolean() }),
  })
  .openapi('ShipmentList');

export type Address = z.infer<typeof AddressSchema>;
export type Parcel = z.infer<typeof ParcelSchema>;
export type CreateShipmentInput = z.infer<typeof CreateShipmentSchema>;
export type ShipmentStatus = z.infer<typeof ShipmentStatusSchema>;
export type Shipment = z.infer<typeof ShipmentSchema>;
