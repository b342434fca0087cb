import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Address, Parcel } from '../src/addresses/schema.js';
import { ApiError } from '../src/core/errors.js';
import {
  CARRIERS,
  type Carrier,
  carrierName,
  findCarrier,
  findService,
  parseCarriers,
  type Service,
  serviceName,
} from '../src/rates/carriers.js';
import { billableGrams, chooseRate, quote, quoteAll, usZone } from '../src/rates/pricing.js';
import { RateListSchema, RatesRequestSchema } from '../src/rates/schema.js';

const address = (country: string, zip: string): Address => ({
  name: 'Ada Lovelace',
  address1: '1 Main St',
  city: 'Somewhere',
  state: 'XX',
  zip,
  country,
});

const NEW_YORK = address('US', '10001');
const NEW_YORK_2 = address('US', '10002');
const SAN_FRANCISCO = address('US', '94104');
const LONDON = address('GB', 'EC1A 1BB');
const BERLIN = address('DE', '10115');
const MUNICH = address('DE', '80331');
const PARIS = address('FR', '75001');
const NAIROBI = address('KE', '00100');

const box = (weight: number, length = 20, width = 15, height = 10): Parcel => ({
  weight,
  length,
  width,
  height,
});
const KILO = box(1000);

function carrier(slug: string): Carrier {
  const found = findCarrier(slug);
  if (!found) throw new Error(`no carrier ${slug}`);
  return found;
}

function service(slug: string, code: string): Service {
  const found = findService(slug, code);
  if (!found) throw new Error(`no service ${slug}/${code}`);
  return found;
}

const cents = (amount: string): number => Math.round(Number(amount) * 100);

function quoteCents(slug: string, code: string, from: Address, to: Address, parcel: Parcel): number {
  const rate = quote(carrier(slug), service(slug, code), from, to, parcel);
  if (!rate) throw new Error(`${slug}/${code} does not serve this`);
  return cents(rate.rate.amount);
}

function apiError(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected an ApiError');
}

describe('carrier fixture', () => {
  it('has the four carriers with their display names', () => {
    expect(CARRIERS.map((c) => c.slug)).toEqual(
      expect.arrayContaining(['usps', 'ups', 'fedex', 'dhl_express']),
    );
    expect(carrierName('usps')).toBe('USPS');
    expect(carrierName('ups')).toBe('UPS');
    expect(carrierName('fedex')).toBe('FedEx');
    expect(carrierName('dhl_express')).toBe('DHL Express');
    expect(serviceName('usps', 'ground_advantage')).toBe('Ground Advantage');
    expect(serviceName('fedex', '2_day')).toBe('2Day');
  });

  it('falls back to the slug or code for names it does not know', () => {
    expect(findCarrier('pony_express')).toBeUndefined();
    expect(findService('ups', 'teleport')).toBeUndefined();
    expect(carrierName('pony_express')).toBe('pony_express');
    expect(serviceName('ups', 'teleport')).toBe('teleport');
  });

  it('rejects a broken fixture and names the bad field', () => {
    const json = JSON.parse(readFileSync(new URL('../fixtures/carriers.json', import.meta.url), 'utf8'));
    expect(() => parseCarriers(json)).not.toThrow();

    json.carriers[1].services[2].rate_card.brackets[3].cents = 'cheap';
    expect(() => parseCarriers(json)).toThrow(
      /carriers\[1\]\.services\[2\]\.rate_card\.brackets\[3\]\.cents/,
    );
  });

  it('rejects a rate card that would make a heavier parcel cheaper', () => {
    const json = JSON.parse(readFileSync(new URL('../fixtures/carriers.json', import.meta.url), 'utf8'));
    const brackets = json.carriers[0].services[0].rate_card.brackets;
    brackets[2].cents = brackets[1].cents - 1;
    expect(() => parseCarriers(json)).toThrow(
      /carriers\[0\]\.services\[0\]\.rate_card\.brackets\[2\]\.cents/,
    );
  });
});

describe('billable weight', () => {
  it('is the dimensional weight for a large light box', () => {
    // 60 × 50 × 40 cm = 120,000 cm³; at 5000 cm³/kg that is 24 kg, far above the 500 g it weighs.
    const large = box(500, 60, 50, 40);
    expect(billableGrams(carrier('ups'), large)).toBe(24_000);
    expect(quoteCents('ups', 'ground', NEW_YORK, NEW_YORK_2, large)).toBe(
      quoteCents('ups', 'ground', NEW_YORK, NEW_YORK_2, box(24_000, 1, 1, 1)),
    );
    expect(quoteCents('ups', 'ground', NEW_YORK, NEW_YORK_2, large)).toBeGreaterThan(
      quoteCents('ups', 'ground', NEW_YORK, NEW_YORK_2, box(500, 1, 1, 1)),
    );
  });

  it('uses each carrier’s divisor', () => {
    const large = box(500, 60, 50, 40);
    expect(billableGrams(carrier('usps'), large)).toBe(20_000);
    expect(billableGrams(carrier('fedex'), large)).toBe(24_000);
  });

  it('is the actual weight for a small heavy box', () => {
    const small = box(5000, 10, 10, 10);
    expect(billableGrams(carrier('ups'), small)).toBe(5000);
    expect(quoteCents('ups', 'ground', NEW_YORK, NEW_YORK_2, small)).toBe(
      quoteCents('ups', 'ground', NEW_YORK, NEW_YORK_2, box(5000, 1, 1, 1)),
    );
  });
});

describe('quote', () => {
  it('is deterministic', () => {
    const first = quoteAll(NEW_YORK, SAN_FRANCISCO, box(2345, 30, 20, 15));
    const second = quoteAll(NEW_YORK, SAN_FRANCISCO, box(2345, 30, 20, 15));
    expect(second).toEqual(first);
    expect(first.length).toBeGreaterThan(5);
  });

  it('prices from the card: brackets, then each started kilogram', () => {
    // Zone 1, so the card price is charged as it stands.
    expect(quoteCents('usps', 'ground_advantage', NEW_YORK, NEW_YORK_2, box(1000))).toBe(700);
    expect(quoteCents('usps', 'ground_advantage', NEW_YORK, NEW_YORK_2, box(1001))).toBe(920);
    expect(quoteCents('usps', 'ground_advantage', NEW_YORK, NEW_YORK_2, box(20_000))).toBe(3400);
    expect(quoteCents('usps', 'ground_advantage', NEW_YORK, NEW_YORK_2, box(20_001))).toBe(3400 + 140);
    expect(quoteCents('usps', 'ground_advantage', NEW_YORK, NEW_YORK_2, box(22_500))).toBe(3400 + 3 * 140);
  });

  it('formats Money with two decimals in the card’s currency', () => {
    const rate = quote(carrier('usps'), service('usps', 'ground_advantage'), NEW_YORK, NEW_YORK_2, box(1000));
    expect(rate).toEqual({
      carrier: 'usps',
      service: 'ground_advantage',
      rate: { amount: '7.00', currency: 'USD' },
      estimated_days: 4,
    });
  });

  it('never charges less for a heavier parcel within a service', () => {
    for (const c of CARRIERS) {
      for (const s of c.services) {
        const [from, to] = s.scope === 'domestic' ? [NEW_YORK, SAN_FRANCISCO] : [NEW_YORK, LONDON];
        let previous = 0;
        for (let weight = 100; weight <= 70_000; weight += 100) {
          const rate = quote(c, s, from, to, box(weight, 1, 1, 1));
          if (!rate) break; // the service's own weight limit
          const amount = cents(rate.rate.amount);
          expect(amount, `${c.slug}/${s.code} at ${weight} g`).toBeGreaterThanOrEqual(previous);
          previous = amount;
        }
        expect(previous, `${c.slug}/${s.code} quoted nothing`).toBeGreaterThan(0);
      }
    }
  });

  it('refuses a parcel over the service’s weight limit', () => {
    const fci = service('usps', 'first_class_international');
    expect(quote(carrier('usps'), fci, NEW_YORK, LONDON, box(1814))).toBeDefined();
    expect(quote(carrier('usps'), fci, NEW_YORK, LONDON, box(1815))).toBeUndefined();
  });
});

describe('US zones', () => {
  it('follows the ZIP prefixes', () => {
    expect(usZone('10001', '10002')).toBe(1);
    expect(usZone('10001', '14604')).toBe(2);
    expect(usZone('10001', '20500')).toBe(3);
    expect(usZone('10001', '60601')).toBe(7);
    expect(usZone('10001', '94104')).toBe(8);
    expect(usZone('94104', '10001')).toBe(8);
    expect(usZone('00901', '99501')).toBe(8);
    expect(usZone(' 10001', '10002-1234')).toBe(1);
    expect(usZone('ABC', '10001')).toBe(8);
  });

  it('makes a distant zone cost more, by the carrier’s percentage', () => {
    const local = quoteCents('usps', 'ground_advantage', NEW_YORK, NEW_YORK_2, KILO);
    const coast = quoteCents('usps', 'ground_advantage', NEW_YORK, SAN_FRANCISCO, KILO);
    expect(local).toBe(700);
    expect(coast).toBe(Math.round((700 * (carrier('usps').us_zone_percent[7] ?? 0)) / 100));
    expect(coast).toBeGreaterThan(local);
  });

  it('applies only within the US', () => {
    expect(quoteCents('dhl_express', 'express_domestic', BERLIN, MUNICH, KILO)).toBe(
      quoteCents('dhl_express', 'express_domestic', BERLIN, address('DE', '10117'), KILO),
    );
    expect(quoteCents('ups', 'worldwide_saver', NEW_YORK, LONDON, KILO)).toBe(
      quoteCents('ups', 'worldwide_saver', SAN_FRANCISCO, LONDON, KILO),
    );
  });
});

describe('quoteAll', () => {
  const scopeOf = (r: { carrier: string; service: string }) => findService(r.carrier, r.service)?.scope;

  it('lists the cheapest first, ties by days, carrier and service', () => {
    const rates = quoteAll(NEW_YORK, SAN_FRANCISCO, box(3200, 40, 30, 20));
    const key = (r: (typeof rates)[number]) => [cents(r.rate.amount), r.estimated_days, r.carrier, r.service];
    const sorted = [...rates].sort((a, b) => {
      const [ka, kb] = [key(a), key(b)];
      for (let i = 0; i < ka.length; i++) {
        const [x, y] = [ka[i] as number | string, kb[i] as number | string];
        if (x !== y) return x < y ? -1 : 1;
      }
      return 0;
    });
    expect(rates.map(key)).toEqual(sorted.map(key));
    expect(cents(rates[0]?.rate.amount ?? '0')).toBeLessThan(cents(rates.at(-1)?.rate.amount ?? '0'));
  });

  it('breaks a price tie by days, then carrier slug, then service code', () => {
    // Four services priced alike; the codes sort against the slugs so that each tie-breaker is needed.
    const ground = service('ups', 'ground');
    const twin = (slug: string, services: string): Carrier => ({
      ...carrier('ups'),
      slug,
      services: services.split(' ').map((entry) => {
        const [code = '', days = ''] = entry.split(':');
        return { ...ground, code, estimated_days: Number(days) };
      }),
    });
    const carriers = [twin('zeta', 'a:5 fast:2'), twin('alpha', 'c:5 b:5')];
    const rates = quoteAll(NEW_YORK, SAN_FRANCISCO, KILO, carriers);
    expect(new Set(rates.map((r) => r.rate.amount)).size).toBe(1);
    expect(rates.map((r) => `${r.carrier}/${r.service}`)).toEqual([
      'zeta/fast',
      'alpha/b',
      'alpha/c',
      'zeta/a',
    ]);
  });

  it('offers only domestic services within a country', () => {
    const rates = quoteAll(NEW_YORK, SAN_FRANCISCO, KILO);
    expect(rates.map(scopeOf)).not.toContain('international');
    expect(rates.map((r) => r.carrier)).toEqual(
      expect.arrayContaining(['usps', 'ups', 'fedex', 'dhl_express']),
    );
  });

  it('offers only international services across a border', () => {
    const rates = quoteAll(NEW_YORK, LONDON, KILO);
    expect(rates.map(scopeOf)).not.toContain('domestic');
    expect(rates.map((r) => `${r.carrier}/${r.service}`)).toContain('usps/priority_mail_international');
  });

  it('leaves out carriers that do not operate in the origin country', () => {
    expect(quoteAll(BERLIN, PARIS, KILO).map((r) => r.carrier)).not.toContain('usps');
    expect(quoteAll(BERLIN, MUNICH, KILO).map((r) => r.carrier)).not.toContain('usps');
    const kenya = quoteAll(NAIROBI, address('KE', '80100'), KILO);
    expect(kenya.map((r) => r.carrier)).toEqual(['dhl_express']);
  });
});

describe('chooseRate', () => {
  const parcel = box(1500, 30, 20, 10);

  it('picks the cheapest of all when nothing is named', () => {
    const all = quoteAll(NEW_YORK, SAN_FRANCISCO, parcel);
    expect(chooseRate({}, NEW_YORK, SAN_FRANCISCO, parcel)).toEqual(all[0]);
    expect(all[0]?.carrier).toBe('usps');
    expect(chooseRate({}, BERLIN, PARIS, parcel).carrier).not.toBe('usps');
  });

  it('picks the carrier’s cheapest service when only the carrier is named', () => {
    const rate = chooseRate({ carrier: 'ups' }, NEW_YORK, LONDON, parcel);
    expect(rate).toEqual(quoteAll(NEW_YORK, LONDON, parcel).find((r) => r.carrier === 'ups'));
    expect(rate.service).toBe('worldwide_expedited');
  });

  it('picks the cheapest carrier offering the code when only the service is named', () => {
    const rate = chooseRate({ service: 'ground' }, NEW_YORK, SAN_FRANCISCO, parcel);
    const grounds = quoteAll(NEW_YORK, SAN_FRANCISCO, parcel).filter((r) => r.service === 'ground');
    expect(grounds.map((r) => r.carrier).sort()).toEqual(['fedex', 'ups']);
    expect(rate).toEqual(grounds[0]);
    expect(rate.carrier).toBe('fedex');
  });

  it('takes exactly the named service when both are named, even when it is not the cheapest', () => {
    const rate = chooseRate({ carrier: 'ups', service: 'next_day_air' }, NEW_YORK, SAN_FRANCISCO, parcel);
    expect(rate).toEqual(
      quote(carrier('ups'), service('ups', 'next_day_air'), NEW_YORK, SAN_FRANCISCO, parcel),
    );
    expect(rate).not.toEqual(chooseRate({ carrier: 'ups' }, NEW_YORK, SAN_FRANCISCO, parcel));
  });

  it('rejects an unknown carrier, listing the valid slugs', () => {
    const error = apiError(() => chooseRate({ carrier: 'pony_express' }, NEW_YORK, SAN_FRANCISCO, parcel));
    expect([error.status, error.code, error.field]).toEqual([422, 'invalid_carrier', 'carrier']);
    expect(error.message).toContain('usps, ups, fedex, dhl_express');
  });

  it('rejects an unknown carrier before looking at the service', () => {
    const error = apiError(() =>
      chooseRate({ carrier: 'UPS', service: 'ground' }, NEW_YORK, SAN_FRANCISCO, parcel),
    );
    expect([error.status, error.code, error.field]).toEqual([422, 'invalid_carrier', 'carrier']);
  });

  it('rejects a service the carrier does not offer, listing its services', () => {
    const error = apiError(() =>
      chooseRate({ carrier: 'usps', service: 'next_day_air' }, NEW_YORK, SAN_FRANCISCO, parcel),
    );
    expect([error.status, error.code, error.field]).toEqual([422, 'invalid_service', 'service']);
    expect(error.message).toContain('ground_advantage, priority, priority_express');
  });

  it('rejects a service that does not serve the route, saying why', () => {
    const error = apiError(() => chooseRate({ carrier: 'ups', service: 'ground' }, NEW_YORK, LONDON, parcel));
    expect([error.status, error.code, error.field]).toEqual([422, 'invalid_service', 'service']);
    expect(error.message).toContain('UPS Ground is a domestic service');
    expect(error.message).toContain('worldwide_expedited, worldwide_saver');
  });

  it('rejects an international service for a domestic parcel', () => {
    const error = apiError(() =>
      chooseRate({ carrier: 'dhl_express', service: 'express_worldwide' }, BERLIN, MUNICH, parcel),
    );
    expect([error.status, error.code, error.field]).toEqual([422, 'invalid_service', 'service']);
    expect(error.message).toContain('international service');
  });

  it('rejects a parcel over the named service’s weight limit', () => {
    const error = apiError(() =>
      chooseRate({ carrier: 'usps', service: 'first_class_international' }, NEW_YORK, LONDON, box(2500)),
    );
    expect([error.status, error.code, error.field]).toEqual([422, 'invalid_service', 'service']);
    expect(error.message).toContain('1814 g');
  });

  it('rejects a carrier none of whose services serves the route, naming the carriers that do', () => {
    const error = apiError(() => chooseRate({ carrier: 'usps' }, BERLIN, PARIS, parcel));
    expect([error.status, error.code, error.field]).toEqual([422, 'invalid_carrier', 'carrier']);
    expect(error.message).toContain('dhl_express, fedex, ups');
  });

  it('rejects a service code that no carrier offers', () => {
    const error = apiError(() => chooseRate({ service: 'teleport' }, NEW_YORK, SAN_FRANCISCO, parcel));
    expect([error.status, error.code, error.field]).toEqual([422, 'invalid_service', 'service']);
    expect(error.message).toContain('ground_advantage');
  });

  it('rejects a service code whose carriers all decline the route', () => {
    const error = apiError(() => chooseRate({ service: 'ground' }, NEW_YORK, LONDON, parcel));
    expect([error.status, error.code, error.field]).toEqual([422, 'invalid_service', 'service']);
    expect(error.message).toContain('UPS Ground');
    expect(error.message).toContain('FedEx Ground');
  });
});

describe('schemas', () => {
  it('accepts a rates request and rejects extra fields', () => {
    const request = { from: NEW_YORK, to: LONDON, parcel: KILO };
    expect(RatesRequestSchema.safeParse(request).success).toBe(true);
    expect(RatesRequestSchema.safeParse({ ...request, carrier: 'ups' }).success).toBe(false);
  });

  it('describes what quoteAll returns', () => {
    expect(RateListSchema.safeParse({ data: quoteAll(NEW_YORK, LONDON, KILO) }).success).toBe(true);
  });
});
