import { ERROR_CODE_NAMES, ERROR_CODES } from './error-codes.js';
import type { IdPrefix } from './ids.js';
import { z } from './zod.js';

/**
 * Schemas every resource shares: timestamps, money, the error body and the `limit` parameter. Plain
 * zod: `meta` carries what the OpenAPI document shows (`id` names a component), so the core needs no
 * HTTP framework.
 */
export const TimestampSchema = z.string().meta({
  example: '2026-11-22T08:23:14Z',
  format: 'date-time',
  // The contract's one form of date-time: UTC, whole seconds, `Z`.
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$',
});

/**
 * An identifier the API hands out, `shp_…`. Its pattern tells readers of the document (and the
 * `conformance` command, which checks another deployment's answers by it) the prefix; the suffix is
 * left loose, as the specification shows only `shp_<id>`.
 */
export const idSchema = (prefix: IdPrefix, example = `${prefix}_01JD3S5Z7QK2N8W4X6Y9A0B1C2`) =>
  z.string().meta({ pattern: `^${prefix}_[0-9A-Za-z_-]+$`, example });

export const MoneySchema = z
  .object({
    amount: z.string().meta({
      example: '12.40',
      description: 'decimal string with two decimals',
      pattern: '^\\d+\\.\\d{2}$',
    }),
    currency: z.string().meta({ example: 'USD' }),
  })
  .meta({ id: 'Money' });

export const ErrorCodeSchema = z.enum(ERROR_CODE_NAMES).meta({
  id: 'ErrorCode',
  description: `Every code the sandbox answers with:\n\n${ERROR_CODE_NAMES.map(
    (code) => `- \`${code}\` (${ERROR_CODES[code].status ?? '4xx'}): ${ERROR_CODES[code].when}`,
  ).join('\n')}`,
  example: 'invalid_address',
});

export const ErrorSchema = z
  .object({
    error: z.object({
      code: ErrorCodeSchema,
      message: z.string().meta({ description: 'for people: what went wrong and what to do' }),
      field: z
        .string()
        .optional()
        .meta({ example: 'to.zip', description: 'the one field to blame, as a dotted path' }),
    }),
  })
  .meta({ id: 'Error' });

/** How many items a list gives when `limit` is absent, and at most. */
export interface LimitBounds {
  default: number;
  max: number;
}

/**
 * The `limit` query parameter, described as the whole number it must be. It is read as text: the
 * route's `parseLimit` refuses anything else with the contract's own message (`400 invalid_parameter`).
 */
export const limitParam = (bounds: LimitBounds) =>
  z
    .string()
    .optional()
    .meta({
      param: { name: 'limit', in: 'query' },
      type: 'integer',
      minimum: 1,
      maximum: bounds.max,
      default: bounds.default,
      example: bounds.default,
      description: `how many items, from 1 to ${bounds.max}`,
    });

/** The `cursor` query parameter of a paged list. */
export const cursorParam = z
  .string()
  .optional()
  .meta({ param: { name: 'cursor', in: 'query' }, description: "the previous page's `meta.cursor`" });

/** The query of a paged list: `limit` and `cursor`. */
export const pageQuery = (bounds: LimitBounds) => ({ limit: limitParam(bounds), cursor: cursorParam });

/** A paged list's `meta`, as the contract shows it for shipments. */
export const PageMetaSchema = z.object({
  total: z.number().int(),
  cursor: idSchema('cur', 'cur_AAAAAZNXJ4gAAAAAAAAAAQ').nullable(),
  has_more: z.boolean(),
});
