import type { Address, Parcel } from '../addresses/schema.js';
import { checkAddress, verifyDestination } from '../addresses/verification.js';
import { ApiError } from '../core/errors.js';
import { money } from '../core/money.js';
import { CARRIERS, type Carrier, findCarrier, type RateCard, type Service } from './carriers.js';
import type { Rate, RatesRequest } from './schema.js';

/**
 * Rating is a pure function of the carrier fixture and the request (no clock, no randomness), so the same
 * shipment always gets the same price and tests can pin exact amounts. Amounts stay integer cents until they
 * are formatted as Money.
 */

interface Offer {
  carrier: Carrier;
  service: Service;
}

interface Priced {
  cents: number;
  rate: Rate;
}

/** The heavier of actual and dimensional weight, since carriers bill a bulky light box for the space it takes. */
export function billableGrams(carrier: Carrier, parcel: Parcel): number {
  const volumeCm3 = parcel.length * parcel.width * parcel.height;
  return Math.max(parcel.weight, Math.ceil((volumeCm3 * 1000) / carrier.dim_divisor));
}

/**
 * US domestic zone (1-8) between two ZIPs. Real zone charts key on the three-digit prefixes of both ZIPs; this
 * approximates them with the fact that ZIP prefixes run from the north-east (0) to the west coast (9):
 * - the same three-digit prefix is zone 1 (local);
 * - the same first digit is zone 2;
 * - otherwise the zone is 2 + the difference of the first digits, at most 8.
 * A ZIP that does not start with a digit cannot be placed and is charged as the farthest zone, 8.
 */
export function usZone(fromZip: string, toZip: string): number {
  const from = fromZip.trim();
  const to = toZip.trim();
  if (!/^\d/.test(from) || !/^\d/.test(to)) return 8;
  if (from.slice(0, 3) === to.slice(0, 3)) return 1;
  return Math.min(8, 2 + Math.abs(Number(from[0]) - Number(to[0])));
}

/** The first bracket that holds the weight; above the last, each started kilogram costs extra. */
function cardCents(card: RateCard, grams: number): number {
  let cents = 0;
  let coveredGrams = 0;
  for (const bracket of card.brackets) {
    if (grams <= bracket.max_grams) return bracket.cents;
    cents = bracket.cents;
    coveredGrams = bracket.max_grams;
  }
  return cents + Math.ceil((grams - coveredGrams) / 1000) * card.additional_kg_cents;
}

function servesCountry(carrier: Carrier, country: string): boolean {
  return carrier.domestic_countries === '*' || carrier.domestic_countries.includes(country);
}

/** Why this service cannot carry this parcel, in words for an error message; undefined when it can. */
function unavailability(
  { carrier, service }: Offer,
  from: Address,
  to: Address,
  parcel: Parcel,
): string | undefined {
  const label = `${carrier.name} ${service.name}`;
  const domestic = from.country === to.country;
  if (service.scope === 'domestic' && !domestic) {
    return `${label} is a domestic service and this parcel goes from ${from.country} to ${to.country}.`;
  }
  if (service.scope === 'international' && domestic) {
    return `${label} is an international service and this parcel stays within ${from.country}.`;
  }
  if (!servesCountry(carrier, from.country)) {
    return domestic
      ? `${carrier.name} has no domestic service in ${from.country}.`
      : `${carrier.name} does not ship from ${from.country}.`;
  }
  if (service.max_weight_grams !== undefined && parcel.weight > service.max_weight_grams) {
    return `${label} takes parcels up to ${service.max_weight_grams} g and this one weighs ${parcel.weight} g.`;
  }
  return undefined;
}

function price(offer: Offer, from: Address, to: Address, parcel: Parcel): Priced | undefined {
  if (unavailability(offer, from, to, parcel) !== undefined) return undefined;
  const { carrier, service } = offer;
  let cents = cardCents(service.rate_card, billableGrams(carrier, parcel));
  if (service.scope === 'domestic' && from.country === 'US' && to.country === 'US') {
    const percent = carrier.us_zone_percent[usZone(from.zip, to.zip) - 1] ?? 100;
    cents = Math.round((cents * percent) / 100);
  }
  return {
    cents,
    rate: {
      carrier: carrier.slug,
      service: service.code,
      rate: money(cents, service.currency),
      estimated_days: service.estimated_days,
    },
  };
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Cheapest first; ties go to the faster service, then to carrier slug and service code so the order never
 * depends on the fixture's order. Amounts compare as cents whatever the currency: every card is in USD.
 */
function cheapestFirst(a: Priced, b: Priced): number {
  return (
    a.cents - b.cents ||
    a.rate.estimated_days - b.rate.estimated_days ||
    byText(a.rate.carrier, b.rate.carrier) ||
    byText(a.rate.service, b.rate.service)
  );
}

function rank(offers: Offer[], from: Address, to: Address, parcel: Parcel): Rate[] {
  return offers
    .flatMap((offer) => price(offer, from, to, parcel) ?? [])
    .sort(cheapestFirst)
    .map((priced) => priced.rate);
}

const offersOf = (carrier: Carrier): Offer[] => carrier.services.map((service) => ({ carrier, service }));

/** The rate of one service, or undefined when it does not serve this route or parcel. */
export function quote(
  carrier: Carrier,
  service: Service,
  from: Address,
  to: Address,
  parcel: Parcel,
): Rate | undefined {
  return price({ carrier, service }, from, to, parcel)?.rate;
}

/**
 * Every service of every carrier that serves this route and parcel, cheapest first. `carriers` is there for
 * tests that need cards the fixture does not have, such as two priced alike.
 */
export function quoteAll(
  from: Address,
  to: Address,
  parcel: Parcel,
  carriers: readonly Carrier[] = CARRIERS,
): Rate[] {
  return rank(carriers.flatMap(offersOf), from, to, parcel);
}

/** The rate comparison: both addresses checked as a shipment's are, then every carrier's rate, cheapest first. */
export function compareRates({ from, to, parcel }: RatesRequest): Rate[] {
  checkAddress(from, 'from');
  checkAddress(to, 'to');
  verifyDestination(to);
  return quoteAll(from, to, parcel);
}

const invalidCarrier = (message: string) =>
  new ApiError(422, 'invalid_carrier', message, { field: 'carrier' });
const invalidService = (message: string) =>
  new ApiError(422, 'invalid_service', message, { field: 'service' });

/**
 * The rate a shipment gets for the carrier and service it asked for, either of which may be omitted: nothing
 * named is the cheapest of all, a carrier alone is its cheapest service, a service code alone is the cheapest
 * carrier offering that code, and both name one service. Whatever cannot be honoured is a 422 whose `field`
 * names the part of the request to change.
 */
export function chooseRate(
  request: { carrier?: string | undefined; service?: string | undefined },
  from: Address,
  to: Address,
  parcel: Parcel,
): Rate {
  const route = `from ${from.country} to ${to.country} weighing ${parcel.weight} g`;

  if (request.carrier !== undefined) {
    const carrier = findCarrier(request.carrier);
    if (!carrier) {
      const slugs = CARRIERS.map((c) => c.slug).join(', ');
      throw invalidCarrier(`Unknown carrier '${request.carrier}'. Valid carriers: ${slugs}.`);
    }
    const serving = () => rank(offersOf(carrier), from, to, parcel);

    if (request.service !== undefined) {
      const service = carrier.services.find((s) => s.code === request.service);
      if (!service) {
        const codes = carrier.services.map((s) => s.code).join(', ');
        throw invalidService(`${carrier.name} has no service '${request.service}'. Its services: ${codes}.`);
      }
      const rate = quote(carrier, service, from, to, parcel);
      if (rate) return rate;
      const alternatives = serving().map((r) => r.service);
      const hint = alternatives.length
        ? ` ${carrier.name} services that do: ${alternatives.join(', ')}.`
        : '';
      throw invalidService(`${unavailability({ carrier, service }, from, to, parcel)}${hint}`);
    }

    const [cheapest] = serving();
    if (cheapest) return cheapest;
    // The carrier is what has to change, so this is reported against `carrier`, with the ones that would do.
    const others = [...new Set(quoteAll(from, to, parcel).map((r) => r.carrier))].sort(byText);
    const hint = others.length ? ` Carriers that do: ${others.join(', ')}.` : '';
    throw invalidCarrier(`${carrier.name} has no service for a parcel ${route}.${hint}`);
  }

  if (request.service !== undefined) {
    const code = request.service;
    const offering = CARRIERS.flatMap(offersOf).filter((offer) => offer.service.code === code);
    if (offering.length === 0) {
      const codes = [...new Set(CARRIERS.flatMap((c) => c.services.map((s) => s.code)))].sort(byText);
      throw invalidService(`No carrier offers a service '${code}'. Service codes: ${codes.join(', ')}.`);
    }
    const [cheapest] = rank(offering, from, to, parcel);
    if (cheapest) return cheapest;
    const reasons = offering.map((offer) => unavailability(offer, from, to, parcel)).join(' ');
    throw invalidService(`No carrier's '${code}' serves this shipment: ${reasons}`);
  }

  const [cheapest] = quoteAll(from, to, parcel);
  if (cheapest) return cheapest;
  // Unreachable with the shipped fixture (DHL Express serves every country); kept for an edited one. No single
  // field is to blame, so none is named.
  throw new ApiError(422, 'invalid_service', `No carrier serves a parcel ${route}.`);
}
