import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import { MAGIC_ADDRESS_VALUES } from '../src/addresses/verification.js';
import { testConfig } from '../src/config/index.js';
import { quoteAll } from '../src/rates/pricing.js';
import { startServer } from '../src/server.js';
import type { Shipment } from '../src/shipments/schema.js';
import type { ShipmentRecord } from '../src/shipments/store.js';
import {
  createTestSandbox,
  DEFAULT_KEY,
  expectError,
  PARCEL,
  shipmentRequest,
  type TestSandbox,
  US_DESTINATION,
  US_ORIGIN,
} from './helpers.js';

const SHIPMENT_ID = /^shp_[0-9A-HJKMNP-TV-Z]{26}$/;
const EVENT_ID = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const AMOUNT = /^\d+\.\d{2}$/;

/** The wall time every test sandbox starts at, as the contract formats it. */
const START = '2026-11-22T08:00:00Z';

const GB_DESTINATION = {
  name: 'Sherlock Holmes',
  address1: '221B Baker St',
  city: 'London',
  state: 'Greater London',
  zip: 'NW1 6XE',
  country: 'GB',
};

/** A copy of `value` without `key`, so that JSON leaves the field out entirely. */
function omit<T extends Record<string, unknown>>(value: T, key: keyof T & string): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...value };
  delete copy[key];
  return copy;
}

async function create(
  sandbox: TestSandbox,
  overrides: Record<string, unknown> = {},
  key: string = DEFAULT_KEY,
): Promise<Shipment> {
  const response = await sandbox.call('POST', '/v1/shipments', { key, body: shipmentRequest(overrides) });
  expect(response.status, response.text).toBe(201);
  return response.json as Shipment;
}

async function createMany(sandbox: TestSandbox, count: number, between?: (i: number) => void) {
  const created: Shipment[] = [];
  for (let i = 0; i < count; i++) {
    created.push(await create(sandbox, { reference: `order-${i}` }));
    between?.(i);
  }
  return created;
}

async function list(sandbox: TestSandbox, query = '', key: string = DEFAULT_KEY) {
  const response = await sandbox.call('GET', `/v1/shipments${query}`, { key });
  expect(response.status, response.text).toBe(200);
  return response.json as {
    data: Shipment[];
    meta: { total: number; cursor: string | null; has_more: boolean };
  };
}

async function events(sandbox: TestSandbox, event: string, key: string = DEFAULT_KEY) {
  const response = await sandbox.call('GET', `/_sandbox/events?event=${event}`, { key });
  expect(response.status, response.text).toBe(200);
  return response.json.data as { id: string; event: string; created_at: string; data: unknown }[];
}

async function freezeClock(sandbox: TestSandbox, key: string = DEFAULT_KEY): Promise<string> {
  const frozen = await sandbox.call('POST', '/_sandbox/clock', { key, body: { frozen: true } });
  expect(frozen.status, frozen.text).toBe(200);
  const clock = await sandbox.call('GET', '/_sandbox/clock', { key });
  expect(clock.json.frozen).toBe(true);
  return clock.json.now as string;
}

async function advanceClock(sandbox: TestSandbox, by: string, key: string = DEFAULT_KEY) {
  const response = await sandbox.call('POST', '/_sandbox/clock/advance', { key, body: { by } });
  expect(response.status, response.text).toBe(200);
  return response.json.now as string;
}

const ids = (shipments: { id: string }[]) => shipments.map((s) => s.id);

describe('POST /v1/shipments', () => {
  it('creates a shipment with the exact Shipment shape, at the cheapest rate', async () => {
    const sandbox = await createTestSandbox();
    await advanceClock(sandbox, '90s');
    const now = await freezeClock(sandbox);
    expect(now).toBe('2026-11-22T08:01:30Z');

    const response = await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() });

    expect(response.status).toBe(201);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const cheapest = quoteAll(US_ORIGIN, US_DESTINATION, PARCEL)[0]!;
    expect(response.json).toEqual({
      id: expect.stringMatching(SHIPMENT_ID),
      status: 'created',
      carrier: cheapest.carrier,
      service: cheapest.service,
      rate: cheapest.rate,
      from: US_ORIGIN,
      to: US_DESTINATION,
      parcel: PARCEL,
      reference: 'order-1042',
      tracking_number: null,
      label_id: null,
      created_at: now,
      cancelled_at: null,
    });
    expect(Object.keys(response.json).sort()).toEqual(
      [
        'id',
        'status',
        'carrier',
        'service',
        'rate',
        'from',
        'to',
        'parcel',
        'reference',
        'tracking_number',
        'label_id',
        'created_at',
        'cancelled_at',
      ].sort(),
    );
    expect(response.json.rate.amount).toMatch(AMOUNT);
    expect(response.json.rate.currency).toBe('USD');
  });

  it('records a shipment.created event whose data is the shipment', async () => {
    const sandbox = await createTestSandbox();
    const shipment = await create(sandbox);

    const recorded = await events(sandbox, 'shipment.created');

    expect(recorded).toEqual([
      { id: expect.stringMatching(EVENT_ID), event: 'shipment.created', created_at: START, data: shipment },
    ]);
    expect(Object.keys(recorded[0]!).sort()).toEqual(['created_at', 'data', 'event', 'id']);
  });

  it('stores a null reference when none is given', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('POST', '/v1/shipments', {
      body: omit(shipmentRequest(), 'reference'),
    });
    expect(response.status).toBe(201);
    expect(response.json.reference).toBeNull();
  });

  it('returns what GET returns', async () => {
    const sandbox = await createTestSandbox();
    const shipment = await create(sandbox);
    const read = await sandbox.call('GET', `/v1/shipments/${shipment.id}`);
    expect(read.status).toBe(200);
    expect(read.json).toEqual(shipment);
  });

  it('gives every shipment a new id', async () => {
    const sandbox = await createTestSandbox();
    await freezeClock(sandbox);
    const created = await createMany(sandbox, 5);
    expect(new Set(ids(created)).size).toBe(5);
  });

  it('takes every timestamp from the account clock', async () => {
    const sandbox = await createTestSandbox();
    expect((await create(sandbox)).created_at).toBe(START);

    const advanced = await advanceClock(sandbox, '3d');
    expect(advanced).toBe('2026-11-25T08:00:00Z');
    const later = await create(sandbox);
    expect(later.created_at).toBe('2026-11-25T08:00:00Z');

    const [event] = await events(sandbox, 'shipment.created');
    expect(event!.created_at).toBe('2026-11-25T08:00:00Z');
    expect((event!.data as Shipment).id).toBe(later.id);
  });

  it("leaves other accounts' clocks where they were", async () => {
    const sandbox = await createTestSandbox();
    const other = await sandbox.newAccount();
    await advanceClock(sandbox, '3d', other);
    expect((await create(sandbox, {}, other)).created_at).toBe('2026-11-25T08:00:00Z');
    expect((await create(sandbox)).created_at).toBe(START);
  });

  it('formats created_at in whole seconds while the clock runs', async () => {
    const sandbox = await createTestSandbox();
    sandbox.wall.now += 1_234;
    const shipment = await create(sandbox);
    expect(shipment.created_at).toMatch(TIMESTAMP);
    expect(shipment.created_at).toBe('2026-11-22T08:00:01Z');
  });

  it('accepts the limits themselves: 100-character reference, 70 kg, 300 cm', async () => {
    const sandbox = await createTestSandbox();
    const parcel = { weight: 70_000, length: 300, width: 1, height: 1 };
    const shipment = await create(sandbox, { reference: 'r'.repeat(100), parcel, carrier: 'ups' });
    expect(shipment.reference).toBe('r'.repeat(100));
    expect(shipment.parcel).toEqual(parcel);
  });

  describe('validation', () => {
    const to = (patch: Record<string, unknown>) => ({ to: { ...US_DESTINATION, ...patch } });
    const parcel = (patch: Record<string, unknown>) => ({ parcel: { ...PARCEL, ...patch } });

    const cases: [string, Record<string, unknown>, string, string][] = [
      ['from is missing', omit(shipmentRequest(), 'from'), 'missing_field', 'from'],
      ['to is missing', omit(shipmentRequest(), 'to'), 'missing_field', 'to'],
      ['parcel is missing', omit(shipmentRequest(), 'parcel'), 'missing_field', 'parcel'],
      ['to.zip is missing', shipmentRequest({ to: omit(US_DESTINATION, 'zip') }), 'missing_field', 'to.zip'],
      [
        'parcel.height is missing',
        shipmentRequest({ parcel: omit(PARCEL, 'height') }),
        'missing_field',
        'parcel.height',
      ],
      [
        'parcel.weight is a string',
        shipmentRequest(parcel({ weight: '1200' })),
        'invalid_field',
        'parcel.weight',
      ],
      ['parcel.weight is zero', shipmentRequest(parcel({ weight: 0 })), 'invalid_field', 'parcel.weight'],
      [
        'parcel.weight is negative',
        shipmentRequest(parcel({ weight: -5 })),
        'invalid_field',
        'parcel.weight',
      ],
      [
        'parcel.weight is fractional',
        shipmentRequest(parcel({ weight: 1.5 })),
        'invalid_field',
        'parcel.weight',
      ],
      [
        'parcel.weight is over 70 kg',
        shipmentRequest(parcel({ weight: 70_001 })),
        'invalid_field',
        'parcel.weight',
      ],
      [
        'parcel.length is over the max',
        shipmentRequest(parcel({ length: 301 })),
        'invalid_field',
        'parcel.length',
      ],
      ['to.country is lower case', shipmentRequest(to({ country: 'us' })), 'invalid_field', 'to.country'],
      ['to.country has 3 letters', shipmentRequest(to({ country: 'USA' })), 'invalid_field', 'to.country'],
      ['to.country is not a country', shipmentRequest(to({ country: 'XX' })), 'invalid_field', 'to.country'],
      [
        'from.country is not a country',
        shipmentRequest({ from: { ...US_ORIGIN, country: 'XX' } }),
        'invalid_field',
        'from.country',
      ],
      ['a top-level field is unknown', shipmentRequest({ colour: 'red' }), 'invalid_field', 'colour'],
      ['a field of to is unknown', shipmentRequest(to({ apartment: '4B' })), 'invalid_field', 'to.apartment'],
      [
        'a field of parcel is unknown',
        shipmentRequest(parcel({ volume: 6 })),
        'invalid_field',
        'parcel.volume',
      ],
      [
        'reference is too long',
        shipmentRequest({ reference: 'r'.repeat(101) }),
        'invalid_field',
        'reference',
      ],
      ['reference is a number', shipmentRequest({ reference: 1042 }), 'invalid_field', 'reference'],
      ['to.name is empty', shipmentRequest(to({ name: '' })), 'invalid_field', 'to.name'],
      ['to.name is blank', shipmentRequest(to({ name: '   ' })), 'invalid_field', 'to.name'],
      ['to.city is too long', shipmentRequest(to({ city: 'c'.repeat(101) })), 'invalid_field', 'to.city'],
      ['to is a string', shipmentRequest({ to: '350 5th Ave, New York' }), 'invalid_field', 'to'],
      ['to is null', shipmentRequest({ to: null }), 'invalid_field', 'to'],
      ['parcel is an array', shipmentRequest({ parcel: [1200, 30, 20, 10] }), 'invalid_field', 'parcel'],
      ['carrier is empty', shipmentRequest({ carrier: '' }), 'invalid_field', 'carrier'],
    ];

    it('says in its own words how long a reference may be', async () => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('POST', '/v1/shipments', {
        body: shipmentRequest({ reference: 'r'.repeat(101) }),
      });
      expect(expectError(response, 422, 'invalid_field', 'reference').message).toBe(
        "'reference' must be at most 100 characters.",
      );
    });

    it.each(cases)('%s -> 422 %s naming %s', async (_name, body, code, field) => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('POST', '/v1/shipments', { body });
      const error = expectError(response, 422, code, field);
      expect(error.message.length).toBeGreaterThan(0);
    });

    it('names the missing field in the message', async () => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('POST', '/v1/shipments', {
        body: shipmentRequest({ to: omit(US_DESTINATION, 'zip') }),
      });
      expect(expectError(response, 422, 'missing_field', 'to.zip').message).toContain('to.zip');
    });

    it('stores nothing when validation fails', async () => {
      const sandbox = await createTestSandbox();
      await create(sandbox);
      const response = await sandbox.call('POST', '/v1/shipments', {
        body: shipmentRequest(parcel({ weight: 0 })),
      });
      expectError(response, 422, 'invalid_field', 'parcel.weight');
      expect((await list(sandbox)).meta.total).toBe(1);
      expect(await events(sandbox, 'shipment.created')).toHaveLength(1);
    });
  });

  describe('address verification', () => {
    it('rejects a postcode that is not valid for the destination country as invalid_address to.zip', async () => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('POST', '/v1/shipments', {
        body: shipmentRequest({ to: { ...GB_DESTINATION, zip: '12345-678' } }),
      });
      expectError(response, 422, 'invalid_address', 'to.zip');
    });

    it('accepts a valid GB destination', async () => {
      const sandbox = await createTestSandbox();
      const shipment = await create(sandbox, { to: GB_DESTINATION });
      expect(shipment.to).toEqual(GB_DESTINATION);
    });

    it('rejects an unknown US state as invalid_address to.state', async () => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('POST', '/v1/shipments', {
        body: shipmentRequest({ to: { ...US_DESTINATION, state: 'ZZ' } }),
      });
      expectError(response, 422, 'invalid_address', 'to.state');
    });

    it('rejects a ZIP code of another state as invalid_address to.zip', async () => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('POST', '/v1/shipments', {
        body: shipmentRequest({ to: { ...US_DESTINATION, state: 'CA' } }),
      });
      expectError(response, 422, 'invalid_address', 'to.zip');
    });

    it('has magic values to test with', () => {
      expect(MAGIC_ADDRESS_VALUES.length).toBeGreaterThan(0);
    });

    it.each(MAGIC_ADDRESS_VALUES.map((magic) => [magic.field, magic.value, magic.message] as const))(
      'rejects the magic value of %s (%s) with its message',
      async (field, value, message) => {
        const sandbox = await createTestSandbox();
        const part = field.slice('to.'.length);
        for (const variant of [value, value.toUpperCase()]) {
          const response = await sandbox.call('POST', '/v1/shipments', {
            body: shipmentRequest({ to: { ...US_DESTINATION, [part]: variant } }),
          });
          expect(expectError(response, 422, 'invalid_address', field).message).toBe(message);
        }
      },
    );

    it('rejects a bad origin ZIP as invalid_field from.zip', async () => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('POST', '/v1/shipments', {
        body: shipmentRequest({ from: { ...US_ORIGIN, zip: '1234' } }),
      });
      expectError(response, 422, 'invalid_field', 'from.zip');
    });

    it('rejects a bad origin state as invalid_field from.state', async () => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('POST', '/v1/shipments', {
        body: shipmentRequest({ from: { ...US_ORIGIN, state: 'ZZ' } }),
      });
      expectError(response, 422, 'invalid_field', 'from.state');
    });

    it('stores nothing and records no event for an address it rejects', async () => {
      const sandbox = await createTestSandbox();
      await create(sandbox);
      const magic = MAGIC_ADDRESS_VALUES[0]!;
      const rejected = [
        shipmentRequest({ to: { ...US_DESTINATION, state: 'ZZ' } }),
        shipmentRequest({ to: { ...US_DESTINATION, [magic.field.slice(3)]: magic.value } }),
        shipmentRequest({ from: { ...US_ORIGIN, zip: '1234' } }),
      ];
      for (const body of rejected) {
        const response = await sandbox.call('POST', '/v1/shipments', { body });
        expect(response.status).toBe(422);
      }
      expect((await list(sandbox)).meta.total).toBe(1);
      expect(await events(sandbox, 'shipment.created')).toHaveLength(1);
      expect(await sandbox.db.get('SELECT count(*) AS n FROM shipments')).toEqual({ n: 1 });
    });
  });

  describe('carrier and service', () => {
    it('honours an explicit carrier and service', async () => {
      const sandbox = await createTestSandbox();
      const shipment = await create(sandbox, { carrier: 'fedex', service: '2_day' });
      const expected = quoteAll(US_ORIGIN, US_DESTINATION, PARCEL).find(
        (r) => r.carrier === 'fedex' && r.service === '2_day',
      )!;
      expect({ carrier: shipment.carrier, service: shipment.service, rate: shipment.rate }).toEqual({
        carrier: 'fedex',
        service: '2_day',
        rate: expected.rate,
      });
    });

    it('with a carrier alone, takes the cheapest service of that carrier', async () => {
      const sandbox = await createTestSandbox();
      const all = quoteAll(US_ORIGIN, US_DESTINATION, PARCEL);
      const cheapestUps = all.find((r) => r.carrier === 'ups')!;
      // Otherwise the test could pass by picking the overall cheapest.
      expect(all[0]!.carrier).not.toBe('ups');

      const shipment = await create(sandbox, { carrier: 'ups' });

      expect({ carrier: shipment.carrier, service: shipment.service, rate: shipment.rate }).toEqual({
        carrier: 'ups',
        service: cheapestUps.service,
        rate: cheapestUps.rate,
      });
    });

    it('takes the cheapest international service for an international route', async () => {
      const sandbox = await createTestSandbox();
      const shipment = await create(sandbox, { to: GB_DESTINATION });
      const cheapest = quoteAll(US_ORIGIN, GB_DESTINATION, PARCEL)[0]!;
      expect([shipment.carrier, shipment.service, shipment.rate]).toEqual([
        cheapest.carrier,
        cheapest.service,
        cheapest.rate,
      ]);
    });

    it('rejects an unknown carrier as invalid_carrier', async () => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('POST', '/v1/shipments', {
        body: shipmentRequest({ carrier: 'pony_express' }),
      });
      expectError(response, 422, 'invalid_carrier', 'carrier');
    });

    it('rejects a service the carrier does not offer as invalid_service', async () => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('POST', '/v1/shipments', {
        body: shipmentRequest({ carrier: 'ups', service: 'teleport' }),
      });
      expectError(response, 422, 'invalid_service', 'service');
    });

    it('rejects a service no carrier offers as invalid_service', async () => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('POST', '/v1/shipments', {
        body: shipmentRequest({ service: 'teleport' }),
      });
      expectError(response, 422, 'invalid_service', 'service');
    });

    it('rejects a domestic service on an international route as invalid_service', async () => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('POST', '/v1/shipments', {
        body: shipmentRequest({ carrier: 'ups', service: 'ground', to: GB_DESTINATION }),
      });
      expectError(response, 422, 'invalid_service', 'service');
      expect((await list(sandbox)).meta.total).toBe(0);
    });
  });
});

describe('GET /v1/shipments/:id', () => {
  it('returns the shipment', async () => {
    const sandbox = await createTestSandbox();
    const shipment = await create(sandbox, { carrier: 'dhl_express' });
    const response = await sandbox.call('GET', `/v1/shipments/${shipment.id}`);
    expect(response.status).toBe(200);
    expect(response.json).toEqual(shipment);
  });

  it('answers 404 not_found for an unknown id', async () => {
    const sandbox = await createTestSandbox();
    await create(sandbox);
    for (const id of ['shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2', 'nope']) {
      expectError(await sandbox.call('GET', `/v1/shipments/${id}`), 404, 'not_found');
    }
  });

  it("answers 404 not_found for another account's shipment, both ways", async () => {
    const sandbox = await createTestSandbox();
    const otherKey = await sandbox.newAccount();
    const theirs = await create(sandbox, {}, otherKey);
    const ours = await create(sandbox);

    expectError(await sandbox.call('GET', `/v1/shipments/${theirs.id}`), 404, 'not_found');
    expectError(await sandbox.call('GET', `/v1/shipments/${ours.id}`, { key: otherKey }), 404, 'not_found');
    expect((await sandbox.call('GET', `/v1/shipments/${theirs.id}`, { key: otherKey })).status).toBe(200);
    expect(ids((await list(sandbox)).data)).toEqual([ours.id]);
    expect(ids((await list(sandbox, '', otherKey)).data)).toEqual([theirs.id]);
  });
});

describe('GET /v1/shipments', () => {
  it('lists newest first', async () => {
    const sandbox = await createTestSandbox();
    const a = await create(sandbox);
    await advanceClock(sandbox, '1m');
    const b = await create(sandbox);
    await advanceClock(sandbox, '1h');
    const c = await create(sandbox);

    const page = await list(sandbox);

    expect(ids(page.data)).toEqual([c.id, b.id, a.id]);
    expect(page.data[0]).toEqual(c);
    expect(page.meta).toEqual({ total: 3, cursor: null, has_more: false });
  });

  it('orders equal timestamps (a frozen clock) by creation, newest first', async () => {
    const sandbox = await createTestSandbox();
    await freezeClock(sandbox);
    const created = await createMany(sandbox, 6);
    expect(new Set(created.map((s) => s.created_at)).size).toBe(1);

    expect(ids((await list(sandbox)).data)).toEqual(ids(created).reverse());

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await list(sandbox, `?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...ids(page.data));
      cursor = page.meta.cursor;
    } while (cursor && seen.length <= created.length);
    expect(seen).toEqual(ids(created).reverse());
  });

  it('answers an empty list for an account without shipments', async () => {
    const sandbox = await createTestSandbox();
    expect(await list(sandbox)).toEqual({ data: [], meta: { total: 0, cursor: null, has_more: false } });
  });

  it('pages 20 by default and at most 100', async () => {
    const sandbox = await createTestSandbox();
    const created = await createMany(sandbox, 101);
    const newestFirst = ids(created).reverse();

    const first = await list(sandbox);
    expect(ids(first.data)).toEqual(newestFirst.slice(0, 20));
    expect(first.meta).toEqual({ total: 101, cursor: expect.stringMatching(/^cur_/), has_more: true });

    const hundred = await list(sandbox, '?limit=100');
    expect(ids(hundred.data)).toEqual(newestFirst.slice(0, 100));
    expect(hundred.meta.has_more).toBe(true);

    const rest = await list(sandbox, `?limit=100&cursor=${hundred.meta.cursor}`);
    expect(ids(rest.data)).toEqual(newestFirst.slice(100));
    expect(rest.meta).toEqual({ total: 101, cursor: null, has_more: false });
  });

  it('reports has_more false and a null cursor when the page is exactly full', async () => {
    const sandbox = await createTestSandbox();
    await createMany(sandbox, 3);
    expect((await list(sandbox, '?limit=3')).meta).toEqual({ total: 3, cursor: null, has_more: false });
    expect((await list(sandbox, '?limit=1')).data).toHaveLength(1);
  });

  it.each(['0', '101', 'abc', '1.5', '-1', '', '1e2'])(
    'answers 400 invalid_parameter for limit=%s',
    async (limit) => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('GET', `/v1/shipments?limit=${limit}`);
      expectError(response, 400, 'invalid_parameter', 'limit');
    },
  );

  it('answers 400 invalid_parameter for an unknown status', async () => {
    const sandbox = await createTestSandbox();
    expectError(await sandbox.call('GET', '/v1/shipments?status=bogus'), 400, 'invalid_parameter', 'status');
  });

  it('answers 400 invalid_parameter for an unknown carrier', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('GET', '/v1/shipments?carrier=pony_express');
    expect(expectError(response, 400, 'invalid_parameter', 'carrier').message).toBe(
      "'carrier' must be a carrier slug; 'pony_express' is not one. Valid carriers: usps, ups, fedex, dhl_express.",
    );
  });

  it.each(['cur_!!!', 'abc', 'cur_', 'cur_bm90LWEtY3Vyc29y'])(
    'answers 400 invalid_parameter for the cursor %s',
    async (cursor) => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('GET', `/v1/shipments?cursor=${encodeURIComponent(cursor)}`);
      expectError(response, 400, 'invalid_parameter', 'cursor');
    },
  );

  it('refuses a forged cursor: cur_ and the base64url of two numbers', async () => {
    const sandbox = await createTestSandbox();
    await createMany(sandbox, 3);
    const page = await list(sandbox, '?limit=1');
    const { created_at } = page.data[0]!;
    for (const place of [`${Date.parse(created_at)}.2`, '0.0', '9999999999999.1']) {
      const forged = `cur_${Buffer.from(place).toString('base64url')}`;
      expectError(
        await sandbox.call('GET', `/v1/shipments?cursor=${forged}`),
        400,
        'invalid_parameter',
        'cursor',
      );
    }
  });

  it('refuses a made-up cursor of the right shape', async () => {
    const sandbox = await createTestSandbox();
    await createMany(sandbox, 3);
    const real = (await list(sandbox, '?limit=1')).meta.cursor as string;
    const madeUp = `cur_${Buffer.alloc(32, 1).toString('base64url')}`;
    expect(madeUp).toHaveLength(real.length);
    expectError(
      await sandbox.call('GET', `/v1/shipments?cursor=${madeUp}`),
      400,
      'invalid_parameter',
      'cursor',
    );
  });

  it('refuses a cursor altered anywhere, even in bits that base64url leaves spare', async () => {
    const sandbox = await createTestSandbox();
    await createMany(sandbox, 3);
    const real = (await list(sandbox, '?limit=1')).meta.cursor as string;
    expect((await list(sandbox, `?limit=1&cursor=${real}`)).data).toHaveLength(1);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = real.length - 1;
    for (const at of [4, 10, 20, 30, last]) {
      const char = real[at] as string;
      // At the last place, the neighbouring character differs only in the two bits it leaves spare.
      const next = alphabet[alphabet.indexOf(char) ^ 1] as string;
      const altered = `${real.slice(0, at)}${next}${real.slice(at + 1)}`;
      const response = await sandbox.call('GET', `/v1/shipments?cursor=${altered}`);
      expectError(response, 400, 'invalid_parameter', 'cursor');
    }
    for (const altered of [real.slice(0, -1), `${real}A`, real.toUpperCase()]) {
      const response = await sandbox.call('GET', `/v1/shipments?cursor=${altered}`);
      expectError(response, 400, 'invalid_parameter', 'cursor');
    }
  });

  it("refuses another account's cursor", async () => {
    const sandbox = await createTestSandbox();
    await createMany(sandbox, 3);
    const other = await sandbox.newAccount();
    for (let i = 0; i < 3; i++) await create(sandbox, { reference: `theirs-${i}` }, other);
    const theirs = (await list(sandbox, '?limit=1', other)).meta.cursor as string;
    expect((await list(sandbox, `?limit=1&cursor=${theirs}`, other)).data).toHaveLength(1);
    expectError(
      await sandbox.call('GET', `/v1/shipments?cursor=${theirs}`),
      400,
      'invalid_parameter',
      'cursor',
    );
  });

  it('keeps cursors valid across a restart of a file database', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sandbox-cursor-'));
    try {
      const config = testConfig({ memory: false, dataDir });
      const first = await startServer(config);
      let cursor: string;
      let expected: string[];
      try {
        const api = (path: string, init: RequestInit = {}) =>
          fetch(`${first.origin}${path}`, {
            ...init,
            headers: { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' },
          });
        for (let i = 0; i < 3; i++) {
          const body = JSON.stringify(shipmentRequest({ reference: `kept-${i}` }));
          expect((await api('/v1/shipments', { method: 'POST', body })).status).toBe(201);
        }
        const page = (await (await api('/v1/shipments?limit=1')).json()) as { meta: { cursor: string } };
        cursor = page.meta.cursor;
        const rest = (await (await api(`/v1/shipments?cursor=${cursor}`)).json()) as { data: Shipment[] };
        expected = ids(rest.data);
        expect(expected).toHaveLength(2);
      } finally {
        await first.close();
      }

      const second = await startServer(config);
      try {
        const response = await fetch(`${second.origin}/v1/shipments?cursor=${cursor}`, {
          headers: { authorization: `Bearer ${DEFAULT_KEY}` },
        });
        expect(response.status, await response.clone().text()).toBe(200);
        expect(ids(((await response.json()) as { data: Shipment[] }).data)).toEqual(expected);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('pages through 45 shipments, each exactly once and in order', async () => {
    const sandbox = await createTestSandbox();
    // Two shipments per second: page boundaries fall both between and inside equal timestamps.
    const created = await createMany(sandbox, 45, (i) => {
      if (i % 2 === 1) sandbox.wall.now += 1_000;
    });
    const newestFirst = ids(created).reverse();

    const pages: Awaited<ReturnType<typeof list>>[] = [];
    let cursor: string | null = null;
    do {
      const page = await list(sandbox, cursor ? `?cursor=${cursor}` : '');
      pages.push(page);
      cursor = page.meta.cursor;
    } while (cursor && pages.length < 10);

    expect(pages.map((p) => p.data.length)).toEqual([20, 20, 5]);
    expect(pages.map((p) => p.meta.has_more)).toEqual([true, true, false]);
    expect(pages.map((p) => p.meta.total)).toEqual([45, 45, 45]);
    expect(pages[2]!.meta.cursor).toBeNull();
    for (const page of pages.slice(0, 2)) expect(page.meta.cursor).toMatch(/^cur_/);
    expect(pages.flatMap((p) => ids(p.data))).toEqual(newestFirst);
  });

  it('keeps a cursor valid while new shipments are created between pages', async () => {
    const sandbox = await createTestSandbox();
    const created = await createMany(sandbox, 45, (i) => {
      if (i % 3 === 2) sandbox.wall.now += 1_000;
    });
    const newestFirst = ids(created).reverse();

    const first = await list(sandbox);
    const added = [await create(sandbox)];
    sandbox.wall.now += 1_000;
    added.push(await create(sandbox));
    const second = await list(sandbox, `?cursor=${first.meta.cursor}`);
    await advanceClock(sandbox, '1h');
    added.push(await create(sandbox));
    const third = await list(sandbox, `?cursor=${second.meta.cursor}`);

    const seen = [...first.data, ...second.data, ...third.data].map((s) => s.id);
    expect(seen).toEqual(newestFirst);
    for (const shipment of added) expect(seen).not.toContain(shipment.id);
    expect([second.meta.total, third.meta.total]).toEqual([47, 48]);
    expect(third.meta).toMatchObject({ cursor: null, has_more: false });
    expect(ids((await list(sandbox, '?limit=3')).data)).toEqual(ids(added).reverse());
  });

  it('filters by status and by carrier, with totals of the matches', async () => {
    const sandbox = await createTestSandbox();
    const cheapest = await createMany(sandbox, 3);
    const ups = [await create(sandbox, { carrier: 'ups' }), await create(sandbox, { carrier: 'ups' })];
    expect(cheapest.every((s) => s.carrier !== 'ups')).toBe(true);
    for (const shipment of [cheapest[0]!, ups[1]!]) {
      expect((await sandbox.call('DELETE', `/v1/shipments/${shipment.id}`)).status).toBe(200);
    }

    const cancelled = await list(sandbox, '?status=cancelled');
    expect(ids(cancelled.data)).toEqual([ups[1]!.id, cheapest[0]!.id]);
    expect(cancelled.data.every((s) => s.status === 'cancelled')).toBe(true);
    expect(cancelled.meta.total).toBe(2);

    const open = await list(sandbox, '?status=created&limit=2');
    expect(ids(open.data)).toEqual([ups[0]!.id, cheapest[2]!.id]);
    expect(open.meta).toEqual({ total: 3, cursor: expect.stringMatching(/^cur_/), has_more: true });
    const openRest = await list(sandbox, `?status=created&limit=2&cursor=${open.meta.cursor}`);
    expect(ids(openRest.data)).toEqual([cheapest[1]!.id]);

    const byUps = await list(sandbox, '?carrier=ups');
    expect(ids(byUps.data)).toEqual(ids(ups).reverse());
    expect(byUps.meta.total).toBe(2);

    const both = await list(sandbox, '?carrier=ups&status=created');
    expect(ids(both.data)).toEqual([ups[0]!.id]);
    expect(both.meta.total).toBe(1);

    expect((await list(sandbox, '?status=delivered')).meta).toEqual({
      total: 0,
      cursor: null,
      has_more: false,
    });
    expect((await list(sandbox, '?carrier=fedex')).meta.total).toBe(0);
  });
});

describe('DELETE /v1/shipments/:id', () => {
  it('cancels a created shipment', async () => {
    const sandbox = await createTestSandbox();
    const shipment = await create(sandbox);
    await advanceClock(sandbox, '2h');

    const response = await sandbox.call('DELETE', `/v1/shipments/${shipment.id}`);

    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      id: shipment.id,
      status: 'cancelled',
      cancelled_at: '2026-11-22T10:00:00Z',
    });
    expect(Object.keys(response.json).sort()).toEqual(['cancelled_at', 'id', 'status']);

    const read = await sandbox.call('GET', `/v1/shipments/${shipment.id}`);
    expect(read.json).toEqual({ ...shipment, status: 'cancelled', cancelled_at: '2026-11-22T10:00:00Z' });
  });

  it('records a shipment.cancelled event whose data is the cancel body', async () => {
    const sandbox = await createTestSandbox();
    const shipment = await create(sandbox);
    await advanceClock(sandbox, '5m');
    const response = await sandbox.call('DELETE', `/v1/shipments/${shipment.id}`);

    expect(await events(sandbox, 'shipment.cancelled')).toEqual([
      {
        id: expect.stringMatching(EVENT_ID),
        event: 'shipment.cancelled',
        created_at: '2026-11-22T08:05:00Z',
        data: response.json,
      },
    ]);
  });

  it('answers 422 shipment_not_cancellable to a second cancel and changes nothing', async () => {
    const sandbox = await createTestSandbox();
    const shipment = await create(sandbox);
    const first = await sandbox.call('DELETE', `/v1/shipments/${shipment.id}`);
    await advanceClock(sandbox, '1h');

    const second = await sandbox.call('DELETE', `/v1/shipments/${shipment.id}`);

    expectError(second, 422, 'shipment_not_cancellable');
    const read = await sandbox.call('GET', `/v1/shipments/${shipment.id}`);
    expect(read.json.cancelled_at).toBe(first.json.cancelled_at);
    expect(await events(sandbox, 'shipment.cancelled')).toHaveLength(1);
  });

  it.each(['in_transit', 'delivered'] as const)(
    'answers 422 shipment_not_cancellable to a %s shipment and leaves it alone',
    async (status) => {
      const sandbox = await createTestSandbox();
      const shipment = await create(sandbox);
      // Tracking moves shipments there; setting the status directly keeps this test about the cancel rule.
      const store = sandbox.stores.shipments;
      const record = (await store.find(sandbox.db, DEFAULT_ACCOUNT.id, shipment.id)) as ShipmentRecord;
      await store.setStatus(sandbox.db, record, status);

      expectError(
        await sandbox.call('DELETE', `/v1/shipments/${shipment.id}`),
        422,
        'shipment_not_cancellable',
      );

      const read = await sandbox.call('GET', `/v1/shipments/${shipment.id}`);
      expect([read.json.status, read.json.cancelled_at]).toEqual([status, null]);
      expect(await events(sandbox, 'shipment.cancelled')).toEqual([]);
    },
  );

  it('answers 404 not_found for an unknown id', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('DELETE', '/v1/shipments/shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2');
    expectError(response, 404, 'not_found');
  });

  it("answers 404 not_found for another account's shipment and leaves it alone", async () => {
    const sandbox = await createTestSandbox();
    const otherKey = await sandbox.newAccount();
    const theirs = await create(sandbox, {}, otherKey);

    expectError(await sandbox.call('DELETE', `/v1/shipments/${theirs.id}`), 404, 'not_found');

    const read = await sandbox.call('GET', `/v1/shipments/${theirs.id}`, { key: otherKey });
    expect(read.json).toEqual(theirs);
    expect(await events(sandbox, 'shipment.cancelled', otherKey)).toEqual([]);
  });
});

describe('list totals', () => {
  it('follow every change of status and carrier, and a reset', async () => {
    const sandbox = await createTestSandbox();
    const [a, b] = [
      await sandbox.newShipment({ carrier: 'ups' }),
      await sandbox.newShipment({ carrier: 'fedex' }),
    ];
    await sandbox.newShipment({ carrier: 'ups' });
    await sandbox.call('POST', '/v1/labels', { body: { shipment_id: a.id } });
    await sandbox.call('DELETE', `/v1/shipments/${b.id}`);
    const total = async (query: string) =>
      (await sandbox.call('GET', `/v1/shipments?${query}`)).json.meta.total;
    const counted = (where: string) =>
      sandbox.db.value<number>(`SELECT count(*) AS n FROM shipments WHERE ${where}`);
    expect(await total('')).toBe(3);
    expect(await total('status=label_generated')).toBe(await counted("status = 'label_generated'"));
    expect(await total('status=label_generated')).toBe(1);
    expect(await total('status=cancelled&carrier=fedex')).toBe(1);
    expect(await total('status=created&carrier=ups')).toBe(1);
    expect(await total('carrier=ups')).toBe(2);
    await sandbox.call('POST', '/_sandbox/reset');
    expect(await total('')).toBe(0);
    expect(await total('carrier=ups')).toBe(0);
  });
});
