/**
 * The address checks zod cannot express. `checkAddress` is validation (`invalid_field`); `verifyDestination`
 * stands in for the carrier's address verification (`invalid_address`), including the documented magic values
 * that let a merchant trigger that error on purpose. Everything is precomputed at module load because this runs
 * on every POST /shipments.
 */
// The package's main entry also loads country names in every language (tens of milliseconds at start); the
// codes alone are all that is needed here.
import countries from 'i18n-iso-countries/index.js';
import { postcodeValidator, postcodeValidatorExistsForCountry } from 'postcode-validator';
import { ApiError } from '../core/errors.js';
import { readJsonFixture } from '../core/fixtures.js';
import { z } from '../core/zod.js';
import type { Address } from './schema.js';

const US_STATE_CODES = [
  ...['AL', 'AK', 'AZ', 'AR', 'CA', 'CO', 'CT', 'DE', 'DC', 'FL', 'GA', 'HI', 'ID', 'IL', 'IN', 'IA', 'KS'],
  ...['KY', 'LA', 'ME', 'MD', 'MA', 'MI', 'MN', 'MS', 'MO', 'MT', 'NE', 'NV', 'NH', 'NJ', 'NM', 'NY', 'NC'],
  ...['ND', 'OH', 'OK', 'OR', 'PA', 'RI', 'SC', 'SD', 'TN', 'TX', 'UT', 'VT', 'VA', 'WA', 'WV', 'WI', 'WY'],
  ...['PR', 'VI', 'GU', 'AS', 'MP', 'AA', 'AE', 'AP'],
] as const;

const SUBDIVISIONS = new Map<string, { codes: ReadonlySet<string>; noun: string; expected: string }>([
  [
    'US',
    { codes: new Set(US_STATE_CODES), noun: 'state', expected: 'a US state, territory or military code' },
  ],
  [
    'CA',
    {
      codes: new Set(['AB', 'BC', 'MB', 'NB', 'NL', 'NS', 'NT', 'NU', 'ON', 'PE', 'QC', 'SK', 'YT']),
      noun: 'province',
      expected: 'a Canadian province or territory code, for example ON',
    },
  ],
  [
    'AU',
    {
      codes: new Set(['ACT', 'NSW', 'NT', 'QLD', 'SA', 'TAS', 'VIC', 'WA']),
      noun: 'state',
      expected: 'an Australian state or territory code, for example NSW',
    },
  ],
]);

// getAlpha2Codes rather than isValid: isValid also accepts alpha-3 and numeric codes.
const COUNTRY_CODES: ReadonlySet<string> = new Set(Object.keys(countries.getAlpha2Codes()));

// Where the official format has a separator that people often leave out, where to put it back.
const POSTCODE_SEPARATORS = new Map([
  ['JP', { at: 3, text: '-' }],
  ['PL', { at: 2, text: '-' }],
  ['US', { at: 5, text: '-' }],
]);

// Fields a magic value may sit in, in the order they are looked at.
const MAGIC_PARTS = ['address1', 'address2', 'city', 'state', 'zip'] as const;

const MagicAddressValueSchema = z
  .object({
    field: z.templateLiteral(['to.', z.enum(MAGIC_PARTS)]),
    value: z.string().trim().min(1),
    message: z.string().min(1),
  })
  .strict();

const zipPrefixRange = z
  .string()
  .regex(/^\d{3}(-\d{3})?$/, 'must be a ZIP prefix such as "005" or a range such as "100-149"')
  .refine((range) => range.slice(0, 3) <= range.slice(-3), 'must run from low to high');

const FixtureSchema = z
  .object({
    about: z.string().optional(),
    magicValues: z.array(MagicAddressValueSchema).min(1),
    usZipPrefixes: z.record(z.enum(US_STATE_CODES), z.array(zipPrefixRange).min(1)),
  })
  .strict();

export type MagicAddressValue = z.infer<typeof MagicAddressValueSchema>;

function loadFixture(): z.infer<typeof FixtureSchema> {
  const { json, path } = readJsonFixture('magic-values.json');
  const parsed = FixtureSchema.safeParse(json);
  if (!parsed.success) throw new Error(`${path} is invalid:\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

const fixture = loadFixture();

export const MAGIC_ADDRESS_VALUES: readonly Readonly<MagicAddressValue>[] = Object.freeze(
  fixture.magicValues.map((magic) => Object.freeze(magic)),
);

const MAGIC_BY_FIELD = new Map<string, Map<string, MagicAddressValue>>();
for (const magic of MAGIC_ADDRESS_VALUES) {
  const byValue = MAGIC_BY_FIELD.get(magic.field) ?? new Map<string, MagicAddressValue>();
  byValue.set(magic.value.toLowerCase(), magic);
  MAGIC_BY_FIELD.set(magic.field, byValue);
}

const US_STATES_BY_ZIP_PREFIX = new Map<string, string[]>();
for (const [state, ranges] of Object.entries(fixture.usZipPrefixes)) {
  for (const range of ranges) {
    for (let prefix = Number(range.slice(0, 3)); prefix <= Number(range.slice(-3)); prefix++) {
      const key = String(prefix).padStart(3, '0');
      US_STATES_BY_ZIP_PREFIX.set(key, [...(US_STATES_BY_ZIP_PREFIX.get(key) ?? []), state]);
    }
  }
}

type Who = 'origin' | 'destination';
interface Problem {
  part: 'country' | 'state' | 'zip';
  message: string;
}

/**
 * Format checks for `from` and `to` (422 `invalid_field`). For the destination only the country is checked
 * here; the rest is `verifyDestination`'s job. The origin is the merchant's own address, so a bad state or
 * postal code there is a validation error rather than an undeliverable destination.
 */
export function checkAddress(address: Address, path: 'from' | 'to'): void {
  const problem =
    path === 'from'
      ? (countryProblem(address, 'origin') ??
        stateProblem(address, 'origin') ??
        postcodeProblem(address, 'origin'))
      : countryProblem(address, 'destination');
  if (problem)
    throw new ApiError(422, 'invalid_field', problem.message, { field: `${path}.${problem.part}` });
}

/**
 * The sandbox's address verification of the destination (422 `invalid_address`, field naming the failing
 * part): magic values first, then state, then postal code. A country that is not a real one is still an
 * `invalid_field`, so this is safe to call without `checkAddress(to, 'to')` first.
 */
export function verifyDestination(to: Address): void {
  for (const part of MAGIC_PARTS) {
    const value = to[part];
    const magic =
      value === undefined ? undefined : MAGIC_BY_FIELD.get(`to.${part}`)?.get(value.trim().toLowerCase());
    if (magic) throw new ApiError(422, 'invalid_address', magic.message, { field: magic.field });
  }
  checkAddress(to, 'to');
  const problem = stateProblem(to, 'destination') ?? postcodeProblem(to, 'destination');
  if (problem) throw new ApiError(422, 'invalid_address', problem.message, { field: `to.${problem.part}` });
}

function countryProblem(address: Address, who: Who): Problem | undefined {
  if (COUNTRY_CODES.has(address.country)) return undefined;
  return {
    part: 'country',
    message: `The ${who} country '${address.country}' is not an ISO 3166-1 alpha-2 country code, for example US.`,
  };
}

function stateProblem(address: Address, who: Who): Problem | undefined {
  const state = address.state.trim().toUpperCase();
  if (state === '') return { part: 'state', message: `The ${who} state must not be empty.` };
  const subdivisions = SUBDIVISIONS.get(address.country);
  if (subdivisions === undefined || subdivisions.codes.has(state)) return undefined;
  return {
    part: 'state',
    message: `The ${who} ${subdivisions.noun} '${address.state.trim()}' is not ${subdivisions.expected}.`,
  };
}

function postcodeProblem(address: Address, who: Who): Problem | undefined {
  const zip = normalisePostcode(address.zip);
  if (zip === '') return { part: 'zip', message: `The ${who} postal code must not be empty.` };
  if (!isPlausiblePostcode(zip, address.country)) {
    return {
      part: 'zip',
      message: `The ${who} postal code '${address.zip.trim()}' is not valid for ${address.country}.`,
    };
  }
  if (address.country !== 'US') return undefined;

  const state = address.state.trim().toUpperCase();
  const states = US_STATES_BY_ZIP_PREFIX.get(zip.slice(0, 3));
  if (states === undefined) {
    return {
      part: 'zip',
      message: `The ${who} ZIP code '${zip}' is not in use in any US state or territory.`,
    };
  }
  if (states.includes(state)) return undefined;
  return {
    part: 'zip',
    message: `The ${who} ZIP code '${zip}' is in ${states.join(' or ')}, not in ${state}.`,
  };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: every ASCII character, control ones too
const ASCII = /^[\x00-\x7f]*$/;

// NFKC turns full-width digits and letters (common from Japanese keyboards) into ASCII; the dash class covers
// the look-alikes people type for a hyphen, the katakana long-vowel mark among them. ASCII is its own NFKC:
// left as it is, it never loads ICU's normalisation data (1.4 MiB of node's binary, resident from then on).
function normalisePostcode(zip: string): string {
  return (ASCII.test(zip) ? zip : zip.normalize('NFKC'))
    .replace(/[\u2010-\u2015\u2212\u30fc]/g, '-')
    .replace(/\s+/g, ' ')
    .trim()
    .toUpperCase();
}

function isPlausiblePostcode(zip: string, country: string): boolean {
  if (!postcodeValidatorExistsForCountry(country)) return true;
  if (postcodeValidator(zip, country)) return true;
  const compact = zip.replace(/[ -]/g, '');
  if (postcodeValidator(compact, country)) return true;
  const separator = POSTCODE_SEPARATORS.get(country);
  return (
    separator !== undefined &&
    postcodeValidator(
      `${compact.slice(0, separator.at)}${separator.text}${compact.slice(separator.at)}`,
      country,
    )
  );
}
