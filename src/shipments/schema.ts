import { AddressSchema, ParcelSchema } from '../addresses/schema.js';
import { LIST_PAGE_SIZE } from '../core/paging.js';
import {
  idSchema,
  type LimitBounds,
  MoneySchema,
  PageMetaSchema,
  pageQuery,
  TimestampSchema,
} from '../core/schemas.js';
import { z } from '../core/zod.js';

/** A page of `GET /v1/shipments`: 20 shipments unless `limit` says otherwise, at most 100. */
export const PAGE_SIZE = LIST_PAGE_SIZE satisfies LimitBounds;

/** The specification does not show a bound on `reference`; docs/behaviour.md lists it. */
export const REFERENCE_MAX_LENGTH = 100;

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
    id: idSchema('shp'),
    status: ShipmentStatusSchema,
    carrier: z.string(),
    service: z.string(),
    rate: MoneySchema,
    from: AddressSchema,
    to: AddressSchema,
    parcel: ParcelSchema,
    reference: z.string().nullable(),
    tracking_number: z.string().nullable(),
    label_id: idSchema('lbl').nullable(),
    created_at: TimestampSchema,
    cancelled_at: TimestampSchema.nullable(),
  })
  .openapi('Shipment');

export const CancelledShipmentSchema = z
  .object({ id: idSchema('shp'), status: z.literal('cancelled'), cancelled_at: TimestampSchema })
  .openapi('CancelledShipment');

export const ListShipmentsQuerySchema = z.object({
  ...pageQuery(PAGE_SIZE),
  status: ShipmentStatusSchema.optional().openapi({ param: { name: 'status', in: 'query' } }),
  carrier: z
    .string()
    .optional()
    .openapi({ param: { name: 'carrier', in: 'query' } }),
});

export const ShipmentListSchema = z
  .object({
    data: z.array(ShipmentSchema),
    meta: PageMetaSchema,
  })
  .openapi('ShipmentList');

export type CreateShipmentInput = z.infer<typeof CreateShipmentSchema>;
export type ShipmentStatus = z.infer<typeof ShipmentStatusSchema>;
export type Shipment = z.infer<typeof ShipmentSchema>;
export type ShipmentList = z.infer<typeof ShipmentListSchema>;
