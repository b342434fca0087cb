import { describe, expect, it } from 'vitest';
import type { Address } from '../src/addresses/schema.js';
import { checkAddress, MAGIC_ADDRESS_VALUES, verifyDestination } from '../src/addresses/verification.js';
import { ApiError } from '../src/core/errors.js';

function expectApiError(
  fn: () => unknown,
  expected: { status: number; code: string; field: string },
): ApiError {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ApiError);
  const error = thrown as ApiError;
  expect({ status: error.status, code: error.code, field: error.field }).toEqual(expected);
  expect(error.message.length).toBeGreaterThan(0);
  return error;
}

const VALID: Record<string, Address> = {
  US: {
    name: 'Ada Lovelace',
    address1: '417 Montgomery St',
    address2: 'Floor 5',
    city: 'San Francisco',
    state: 'CA',
    zip: '94104',
    country: 'US',
  },
  CA: {
    name: 'Canada Post',
    address1: '2701 Riverside Dr',
    city: 'Ottawa',
    state: 'ON',
    zip: 'K1A 0B1',
    country: 'CA',
  },
  GB: {
    name: 'Prime Minister',
    address1: '10 Downing Street',
    city: 'London',
    state: 'England',
    zip: 'SW1A 2AA',
    country: 'GB',
  },
  DE: {
    name: 'Deutscher Bundestag',
    address1: 'Platz der Republik 1',
    city: 'Berlin',
    state: 'BE',
    zip: '11011',
    country: 'DE',
  },
  FR: {
    name: 'Palais de l’Élysée',
    address1: '55 Rue du Faubourg Saint-Honoré',
    city: 'Paris',
    state: 'Île-de-France',
    zip: '75008',
    country: 'FR',
  },
  AU: {
    name: 'Parliament House',
    address1: 'Parliament Dr',
    city: 'Canberra',
    state: 'ACT',
    zip: '2600',
    country: 'AU',
  },
  JP: {
    name: 'Tokyo Station',
    address1: '1-9-1 Marunouchi',
    city: 'Chiyoda-ku',
    state: 'Tokyo',
    zip: '100-0005',
    country: 'JP',
  },
  NL: {
    name: 'Koninklijk Paleis',
    address1: 'Dam 1',
    city: 'Amsterdam',
    state: 'Noord-Holland',
    zip: '1012 RJ',
    country: 'NL',
  },
};

const valid = (country: string, changes: Partial<Address> = {}): Address => {
  const address = VALID[country];
  if (address === undefined) throw new Error(`no valid address for ${country}`);
  return { ...address, ...changes };
};

const BAD_ZIPS: [country: string, zip: string][] = [
  ['US', '9410'],
  ['CA', 'D1A 0B1'],
  ['GB', '1234'],
  ['DE', '1101'],
  ['FR', '750008'],
  ['AU', '26000'],
  ['JP', '100-000'],
  ['NL', '1012 R'],
];

describe('verifyDestination', () => {
  it.each(Object.keys(VALID))('accepts a real %s address', (country) => {
    expect(() => verifyDestination(valid(country))).not.toThrow();
  });

  it.each([
    ['GB', 'sw1a1aa'],
    ['GB', ' SW1A 1AA '],
    ['CA', 'K1A0B1'],
    ['CA', 'k1a 0b1'],
    ['US', '94104-1234'],
    ['US', '941041234'],
    ['JP', '1000001'],
    ['JP', '１００−０００１'],
    ['NL', '1012rj'],
  ])('accepts the %s postal code %j once normalised', (country, zip) => {
    expect(() => verifyDestination(valid(country, { zip }))).not.toThrow();
  });

  it.each(BAD_ZIPS)('rejects the %s postal code %j', (country, zip) => {
    const error = expectApiError(() => verifyDestination(valid(country, { zip })), {
      status: 422,
      code: 'invalid_address',
      field: 'to.zip',
    });
    expect(error.message).toContain(zip);
  });

  it('uses postcode-validator rules beyond the main countries', () => {
    const brazil: Address = {
      name: 'A',
      address1: 'Av. Paulista 1578',
      city: 'São Paulo',
      state: 'SP',
      zip: '01310',
      country: 'BR',
    };
    expectApiError(() => verifyDestination(brazil), {
      status: 422,
      code: 'invalid_address',
      field: 'to.zip',
    });
    expect(() => verifyDestination({ ...brazil, zip: '01310-200' })).not.toThrow();
  });

  it('accepts any postal code for a country without a known format', () => {
    const hongKong: Address = {
      name: 'A',
      address1: '1 Queen’s Road',
      city: 'Central',
      state: 'HK',
      zip: 'n/a',
      country: 'HK',
    };
    expect(() => verifyDestination(hongKong)).not.toThrow();
  });

  it('rejects a US state that does not exist', () => {
    expectApiError(() => verifyDestination(valid('US', { state: 'ZZ' })), {
      status: 422,
      code: 'invalid_address',
      field: 'to.state',
    });
  });

  it('accepts US territories and military codes with their own ZIPs', () => {
    expect(() =>
      verifyDestination(valid('US', { city: 'San Juan', state: 'PR', zip: '00901' })),
    ).not.toThrow();
    expect(() => verifyDestination(valid('US', { city: 'APO', state: 'AE', zip: '09021' }))).not.toThrow();
    expect(() =>
      verifyDestination(valid('US', { city: 'Washington', state: 'dc', zip: '20500' })),
    ).not.toThrow();
  });

  it('rejects a ZIP that belongs to another state, naming both', () => {
    const error = expectApiError(() => verifyDestination(valid('US', { state: 'NY' })), {
      status: 422,
      code: 'invalid_address',
      field: 'to.zip',
    });
    expect(error.message).toContain('CA');
    expect(error.message).toContain('NY');
  });

  it('rejects a Canadian province and an Australian state that do not exist', () => {
    expectApiError(() => verifyDestination(valid('CA', { state: 'QB' })), {
      status: 422,
      code: 'invalid_address',
      field: 'to.state',
    });
    expectApiError(() => verifyDestination(valid('AU', { state: 'NSX' })), {
      status: 422,
      code: 'invalid_address',
      field: 'to.state',
    });
  });

  it('publishes the documented magic values', () => {
    expect(MAGIC_ADDRESS_VALUES.map(({ field, value }) => [field, value])).toEqual(
      expect.arrayContaining([
        ['to.address1', '1 Undeliverable Way'],
        ['to.city', 'Nowhere'],
        ['to.zip', '00000'],
      ]),
    );
  });

  it.each(MAGIC_ADDRESS_VALUES)('fails on the magic value $field = $value', ({ field, value, message }) => {
    const part = field.slice('to.'.length) as keyof Address;
    const error = expectApiError(() => verifyDestination(valid('GB', { [part]: value })), {
      status: 422,
      code: 'invalid_address',
      field,
    });
    expect(error.message).toBe(message);
  });

  it('matches magic values on the trimmed value, ignoring case', () => {
    expectApiError(() => verifyDestination(valid('US', { city: '  NOWHERE ' })), {
      status: 422,
      code: 'invalid_address',
      field: 'to.city',
    });
  });

  it('checks magic values before the state and the postal code', () => {
    expectApiError(() => verifyDestination(valid('US', { state: 'ZZ', zip: '00000' })), {
      status: 422,
      code: 'invalid_address',
      field: 'to.zip',
    });
    expectApiError(() => verifyDestination(valid('US', { state: 'ZZ', address1: '1 Undeliverable Way' })), {
      status: 422,
      code: 'invalid_address',
      field: 'to.address1',
    });
  });

  it('checks the state before the postal code', () => {
    expectApiError(() => verifyDestination(valid('US', { state: 'ZZ', zip: '1' })), {
      status: 422,
      code: 'invalid_address',
      field: 'to.state',
    });
  });
});

describe('checkAddress', () => {
  it.each(['from', 'to'] as const)('rejects a user-assigned country code on %s', (path) => {
    for (const country of ['XX', 'ZZ', 'AA', 'QM']) {
      expectApiError(() => checkAddress(valid('US', { country }), path), {
        status: 422,
        code: 'invalid_field',
        field: `${path}.country`,
      });
    }
  });

  it('rejects a fake destination country in verifyDestination too', () => {
    expectApiError(() => verifyDestination(valid('GB', { country: 'XX' })), {
      status: 422,
      code: 'invalid_field',
      field: 'to.country',
    });
  });

  it.each(Object.keys(VALID))('accepts a real %s origin', (country) => {
    expect(() => checkAddress(valid(country), 'from')).not.toThrow();
  });

  it.each(BAD_ZIPS)('reports the %s origin postal code %j as invalid_field', (country, zip) => {
    expectApiError(() => checkAddress(valid(country, { zip }), 'from'), {
      status: 422,
      code: 'invalid_field',
      field: 'from.zip',
    });
  });

  it('reports a bad origin state and an origin ZIP/state mismatch as invalid_field', () => {
    expectApiError(() => checkAddress(valid('US', { state: 'ZZ' }), 'from'), {
      status: 422,
      code: 'invalid_field',
      field: 'from.state',
    });
    expectApiError(() => checkAddress(valid('US', { state: 'NY' }), 'from'), {
      status: 422,
      code: 'invalid_field',
      field: 'from.zip',
    });
  });

  it('leaves the destination state and postal code to verifyDestination', () => {
    expect(() => checkAddress(valid('US', { state: 'ZZ', zip: '1' }), 'to')).not.toThrow();
  });

  it('does not apply magic values to the origin', () => {
    expect(() => checkAddress(valid('US', { city: 'Nowhere' }), 'from')).not.toThrow();
  });
});
