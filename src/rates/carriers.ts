import { readJsonFixture } from '../core/fixtures.js';
import { z } from '../core/zod.js';

/**
 * The carriers, their services and rate cards, from `fixtures/carriers.json`. The fixture is read and validated
 * once, when this module loads, so a broken edit stops the server at start with the path of the bad field
 * instead of surfacing later as a wrong price.
 */

const positiveInt = z.number().int().positive();
const country = z.string().regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 code in upper case');

const RateCardSchema = z
  .object({
    /** Price of a parcel whose billable weight is at most `max_grams`; the first bracket that fits applies. */
    brackets: z
      .array(z.object({ max_grams: positiveInt, cents: positiveInt }).strict())
      .min(1)
      .superRefine((brackets, ctx) => {
        // Out-of-order brackets would make a heavier parcel cheaper, which no real card does.
        brackets.forEach((bracket, i) => {
          const previous = brackets[i - 1];
          if (previous && bracket.max_grams <= previous.max_grams) {
            ctx.addIssue({
              code: 'custom',
              path: [i, 'max_grams'],
              message: 'must exceed the previous bracket',
            });
          }
          if (previous && bracket.cents < previous.cents) {
            ctx.addIssue({
              code: 'custom',
              path: [i, 'cents'],
              message: 'must not be below the previous bracket',
            });
          }
        });
      }),
    /** Added for each started kilogram above the last bracket. */
    additional_kg_cents: positiveInt,
  })
  .strict();

const ServiceSchema = z
  .object({
    code: z.string().regex(/^[a-z0-9_]+$/, 'must be lower case letters, digits and underscores'),
    name: z.string().min(1),
    scope: z.enum(['domestic', 'international']),
    estimated_days: positiveInt,
    currency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code'),
    /** The heaviest actual weight the service accepts; absent means the API's own parcel limit. */
    max_weight_grams: positiveInt.optional(),
    rate_card: RateCardSchema,
  })
  .strict();

const CarrierSchema = z
  .object({
    slug: z.string().regex(/^[a-z0-9_]+$/, 'must be lower case letters, digits and underscores'),
    name: z.string().min(1),
    /** Countries with domestic service, which are also the countries its international services leave from. */
    domestic_countries: z.union([z.literal('*'), z.array(country).min(1)], {
      error: 'must be "*" (every country) or a list of ISO 3166-1 alpha-2 codes',
    }),
    /** cm³ per kg: dimensional grams = length × width × height × 1000 / divisor. */
    dim_divisor: positiveInt,
    /** Percent of the card price for US domestic zones 1 to 8. */
    us_zone_percent: z
      .array(positiveInt)
      .length(8)
      .refine(
        (p) => p.every((value, i) => i === 0 || value >= (p[i - 1] ?? 0)),
        'must not decrease with the zone',
      ),
    services: z.array(ServiceSchema).min(1),
  })
  .strict()
  .superRefine((carrier, ctx) => {
    duplicates(carrier.services.map((s) => s.code)).forEach((i) => {
      ctx.addIssue({
        code: 'custom',
        path: ['services', i, 'code'],
        message: 'is used twice in this carrier',
      });
    });
  });

const FixtureSchema = z
  .object({ carriers: z.array(CarrierSchema).min(1) })
  .strict()
  .superRefine((fixture, ctx) => {
    duplicates(fixture.carriers.map((c) => c.slug)).forEach((i) => {
      ctx.addIssue({ code: 'custom', path: ['carriers', i, 'slug'], message: 'is used twice' });
    });
  });

/** Indexes of the values already seen earlier in the list. */
function duplicates(values: string[]): number[] {
  return values.flatMap((value, i) => (values.indexOf(value) === i ? [] : [i]));
}

export type Carrier = z.infer<typeof CarrierSchema>;
export type Service = z.infer<typeof ServiceSchema>;
export type RateCard = z.infer<typeof RateCardSchema>;

/** Validates the fixture's parsed JSON; exported so tests can show that a bad field is named. */
export function parseCarriers(json: unknown, source = 'fixtures/carriers.json'): Carrier[] {
  const result = FixtureSchema.safeParse(json);
  if (!result.success) throw new Error(`${source} is invalid:\n${z.prettifyError(result.error)}`);
  return result.data.carriers;
}

const fixture = readJsonFixture('carriers.json');
export const CARRIERS: readonly Carrier[] = parseCarriers(fixture.json, fixture.path);

const bySlug = new Map(CARRIERS.map((carrier) => [carrier.slug, carrier]));

export function findCarrier(slug: string): Carrier | undefined {
  return bySlug.get(slug);
}

/** The display name; the slug itself for a carrier the fixture no longer lists (an old stored shipment). */
export function carrierName(slug: string): string {
  return findCarrier(slug)?.name ?? slug;
}

export function findService(carrierSlug: string, serviceCode: string): Service | undefined {
  return findCarrier(carrierSlug)?.services.find((service) => service.code === serviceCode);
}

/** The display name; the code itself for a service the fixture no longer lists. */
export function serviceName(carrierSlug: string, serviceCode: string): string {
  return findService(carrierSlug, serviceCode)?.name ?? serviceCode;
}
