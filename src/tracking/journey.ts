import type { Address } from '../addresses/schema.js';
import { readJsonFixture } from '../core/fixtures.js';
import { z } from '../core/zod.js';
import type { Place } from '../scenarios/vocabulary.js';

/**
 * The journey of a package: the sender's city, the hubs it is sorted through and the recipient's
 * city, from `fixtures/hubs.json`. Pure: the randomness comes in as `rng`, so a seeded caller gets
 * the same route every time.
 */

export interface RouteStop {
  place: Place;
  city: string;
  state?: string;
  country: string;
  /** `City, ST, CC`, or `City, CC` where the place has no short state code (see formatLocation). */
  location: string;
}

/** Uniform in [0, 1). */
export type Rng = () => number;

export type RouteAddress = Pick<Address, 'city' | 'state' | 'zip' | 'country'>;

const country = z.string().regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 code in upper case');

const HubSchema = z
  .object({
    city: z.string().min(1),
    state: z
      .string()
      .regex(/^[A-Z]{2,3}$/, 'must be a short state code such as TX or NSW')
      .optional(),
    country,
    /** Leading digits of the ZIP codes this hub serves; the longest match wins. */
    zip_prefixes: z
      .array(z.string().regex(/^[0-9]+$/, 'must be digits'))
      .min(1)
      .optional(),
  })
  .strict();

const hubsByCountry = z.record(country, z.array(HubSchema).min(1)).superRefine((byCountry, ctx) => {
  for (const [code, hubs] of Object.entries(byCountry)) {
    hubs.forEach((hub, i) => {
      if (hub.country !== code) {
        ctx.addIssue({
          code: 'custom',
          path: [code, i, 'country'],
          message: `must be ${code}, its list's key`,
        });
      }
    });
  }
});

const FixtureSchema = z
  .object({
    about: z.string(),
    hubs: hubsByCountry,
    carriers: z.record(z.string(), z.object({ sort_hubs: hubsByCountry, gateways: hubsByCountry }).strict()),
  })
  .strict();

type Hub = z.infer<typeof HubSchema>;
type Network = z.infer<typeof FixtureSchema>['carriers'][string];

/** Validates the fixture's parsed JSON; exported so tests can show that a bad field is named. */
export function parseHubs(json: unknown, source = 'fixtures/hubs.json'): z.infer<typeof FixtureSchema> {
  const result = FixtureSchema.safeParse(json);
  if (!result.success) throw new Error(`${source} is invalid:\n${z.prettifyError(result.error)}`);
  return result.data;
}

const hubsFile = readJsonFixture('hubs.json');
const FIXTURE = parseHubs(hubsFile.json, hubsFile.path);

/**
 * `City, ST, CC`. The state is written only when it is a short code of two or three letters (`TX`, `ON`,
 * `NSW`), as US, Canadian and Australian addresses have it; a spelled-out region (`Bavaria`, `Tokyo`,
 * `Greater London`) would only repeat or blur the city, so those places read `City, CC`.
 */
export function formatLocation(place: { city: string; state?: string | undefined; country: string }): string {
  const state = place.state?.trim().toUpperCase();
  const parts = [place.city.trim(), ...(state && /^[A-Z]{2,3}$/.test(state) ? [state] : []), place.country];
  return parts.join(', ');
}

/**
 * The stops in travel order: origin, origin_hub, zero to two transit_hub, destination_hub, destination.
 * International journeys pass through the carrier's export gateway in the origin country and its import
 * gateway in the destination country, where the fixture knows them; domestic ones between different hubs
 * may pass through one of the carrier's national sort hubs.
 */
export function planRoute(carrier: string, from: RouteAddress, to: RouteAddress, rng: Rng): RouteStop[] {
  const network = FIXTURE.carriers[carrier];
  const originHub = hubFor(from, rng);
  const destinationHub = hubFor(to, rng);
  const transit =
    from.country === to.country
      ? sortHubs(network, from.country, originHub, destinationHub, rng)
      : gateways(network, from, to);
  return [
    stop('origin', from),
    stop('origin_hub', originHub),
    ...transit.map((hub) => stop('transit_hub', hub)),
    stop('destination_hub', destinationHub),
    stop('destination', to),
  ];
}

function stop(place: Place, at: { city: string; state?: string | undefined; country: string }): RouteStop {
  const state = at.state?.trim();
  return {
    place,
    city: at.city.trim(),
    ...(state ? { state } : {}),
    country: at.country,
    location: formatLocation(at),
  };
}

/**
 * The hub serving an address: by ZIP prefix where the country's hubs have them (the US), else the hub in
 * the address's city or state, else any hub of the country. A country the fixture does not list is served
 * from a facility in the address's own city, which is what a carrier's local depot would show.
 */
function hubFor(address: RouteAddress, rng: Rng): Hub {
  const hubs = FIXTURE.hubs[address.country];
  if (!hubs) return { city: address.city, state: address.state, country: address.country };
  const city = address.city.trim().toLowerCase();
  const state = address.state.trim().toUpperCase();
  return (
    byZip(hubs, address.zip) ??
    hubs.find((hub) => hub.city.toLowerCase() === city) ??
    hubs.find((hub) => hub.state === state) ??
    pick(hubs, rng)
  );
}

/** The hub with the longest `zip_prefixes` entry that starts the ZIP code, if any. */
function byZip(hubs: readonly Hub[], zip: string): Hub | undefined {
  const digits = zip.replace(/[^0-9]/g, '');
  let best: { hub: Hub; length: number } | undefined;
  for (const hub of hubs) {
    for (const prefix of hub.zip_prefixes ?? []) {
      if (digits.startsWith(prefix) && prefix.length > (best?.length ?? 0))
        best = { hub, length: prefix.length };
    }
  }
  return best?.hub;
}

function sortHubs(
  network: Network | undefined,
  code: string,
  origin: Hub,
  destination: Hub,
  rng: Rng,
): Hub[] {
  // A parcel sorted and delivered by the same hub never visits a national hub.
  if (sameCity(origin, destination)) return [];
  const candidates = (network?.sort_hubs[code] ?? []).filter(
    (hub) => !sameCity(hub, origin) && !sameCity(hub, destination),
  );
  if (candidates.length === 0 || rng() < 0.4) return [];
  return [pick(candidates, rng)];
}

function gateways(network: Network | undefined, from: RouteAddress, to: RouteAddress): Hub[] {
  const exit = gateway(network, from);
  const entry = gateway(network, to);
  return [exit, entry].filter((hub): hub is Hub => hub !== undefined);
}

function gateway(network: Network | undefined, address: RouteAddress): Hub | undefined {
  const candidates = network?.gateways[address.country];
  if (!candidates) return undefined;
  return byZip(candidates, address.zip) ?? candidates[0];
}

function sameCity(a: Hub, b: Hub): boolean {
  return a.country === b.country && a.city.toLowerCase() === b.city.toLowerCase();
}

function pick<T>(items: readonly T[], rng: Rng): T {
  const item = items[Math.floor(rng() * items.length)];
  if (item === undefined) throw new Error('pick from an empty list');
  return item;
}

/** The carriers' gateways of one country; tests use it to check that international routes pass through them. */
export function carrierGateways(carrier: string, code: string): string[] {
  return (FIXTURE.carriers[carrier]?.gateways[code] ?? []).map((hub) => formatLocation(hub));
}
