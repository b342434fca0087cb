import { hash } from 'node:crypto';
import { DAY, MINUTE } from '../core/time.js';
import type { Scenario, ScenarioStep } from '../scenarios/files.js';
import type { Place, TrackingStatus } from '../scenarios/vocabulary.js';
import { describeStep, type ExceptionMoment, fillPlaceholders, type Moment } from './descriptions.js';
import { planRoute, type Rng, type RouteAddress, type RouteStop } from './journey.js';
import { mersenneTwister } from './random.js';

export interface TimelineInput {
  /** The server's seed (`--seed`). */
  seed: string;
  labelId: string;
  carrier: string;
  from: RouteAddress;
  to: RouteAddress;
  /** When the label was created, in ms on the account's clock: the first step happens exactly then. */
  startedAt: number;
  /**
   * The parcel's latest event, for a plan that goes on from where the parcel is (a forced advance):
   * its first step happens there and is worded for what the parcel has been through. Without it the
   * plan starts at the sender's, before pickup.
   */
  after?: { status: TrackingStatus; location: string } | undefined;
}

export interface TimelineStep {
  /** The scenario step this event plays. */
  index: number;
  status: TrackingStatus;
  description: string;
  location: string;
  occurredAt: number;
}

/** Real scans never land on the hour; this keeps them a few minutes off without changing their order. */
const MAX_JITTER_MS = 7 * MINUTE;

/**
 * Every event of the scenario for one label, one per step, oldest first. A pure function of the input: the
 * same label always gets the same route, wording and minutes, and a different label (or `--seed`) other ones.
 */
export function planTimeline(input: TimelineInput, scenario: Scenario): TimelineStep[] {
  const rng = seededRng(input.seed, input.labelId);
  const route = planRoute(input.carrier, input.from, input.to, rng);
  let previous = input.after && whereItIs(input.after, route);
  const positions = placeSteps(scenario.steps, route.length, previous?.position);
  const times = stepTimes(scenario.steps, input.startedAt, rng);

  return scenario.steps.map((step, index) => {
    const position = positions[index] ?? 0;
    const stop = route[position] ?? route[0];
    if (!stop) throw new Error('a route has at least its origin and destination');
    const moment = momentOf(step.status, position, previous, route.length);
    previous = { position, moment };
    return {
      index,
      status: step.status,
      description: step.description
        ? fillPlaceholders(step.description, stop.city)
        : describeStep({ carrier: input.carrier, moment, place: stop.place, city: stop.city }, rng),
      location: stop.location,
      occurredAt: times[index] ?? input.startedAt,
    };
  });
}

/**
 * The `estimated_delivery` of a label. With a `delivered` step in the scenario it is that step's time: the
 * sandbox knows the future, and a merchant testing a delivery-date display wants the estimate to come true.
 * Without one (lost, returned, never shipped) it is the promise made when the label was bought, `startedAt`
 * plus the service's days, and it stays that: a carrier does not announce that a package will never arrive.
 * `timeline` is the whole planned timeline, not only the events that have happened so far.
 */
export function estimatedDelivery(
  timeline: readonly TimelineStep[],
  scenario: Scenario,
  startedAt: number,
  serviceDays: number,
): number {
  const deliveredIndex = scenario.steps.findLastIndex((step) => step.status === 'delivered');
  const delivered = timeline.find((step) => step.index === deliveredIndex);
  return delivered ? delivered.occurredAt : startedAt + serviceDays * DAY;
}

function seededRng(seed: string, labelId: string): Rng {
  const digest = hash('sha256', `${seed}\0${labelId}`, 'buffer');
  return mersenneTwister(digest.readUInt32BE(0));
}

/**
 * Step times: the label's creation plus the cumulative delays, each moved by up to a quarter of its own
 * delay (at most a few minutes) but never before the step that precedes it.
 */
function stepTimes(steps: readonly ScenarioStep[], startedAt: number, rng: Rng): number[] {
  let nominal = startedAt;
  let previous = startedAt;
  return steps.map((step, index) => {
    nominal += step.afterMs;
    // Drawn for every step, so that a changed delay does not shift every later step's jitter.
    const draw = rng();
    if (index === 0) return nominal;
    const spread = Math.min(MAX_JITTER_MS, step.afterMs / 4);
    const jitter = Math.round(((draw * 2 - 1) * spread) / 1000) * 1000;
    previous = Math.max(previous, nominal + jitter);
    return previous;
  });
}

/**
 * The index into the route of every step. A step's `at` pins it; otherwise pre_transit, accepted and
 * exception happen where the package is, out_for_delivery and delivered at the destination, and a run of
 * in_transit steps spreads evenly over the hubs still ahead, ending at the destination hub. After the first
 * `returned` step the package heads back: later steps move one stop back towards the origin each.
 */
function placeSteps(steps: readonly ScenarioStep[], length: number, start = 0): number[] {
  const destinationHub = length - 2;
  const destination = length - 1;
  const positions: number[] = [];
  let position = start;
  let returning = false;

  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    if (!step) break;
    if (step.at) {
      position = resolvePlace(step.at, position, length);
    } else if (step.status === 'in_transit') {
      let run = 1;
      while (steps[i + run]?.status === 'in_transit' && !steps[i + run]?.at) run++;
      const hubs = hubsAhead(position, destinationHub, returning);
      positions.push(...spread(hubs, run));
      position = positions.at(-1) ?? position;
      i += run - 1;
      continue;
    } else if (step.status === 'out_for_delivery' || step.status === 'delivered') {
      position = returning ? 0 : destination;
    } else if (step.status === 'returned' && returning) {
      position = Math.max(position - 1, 0);
    }
    if (step.status === 'returned') returning = true;
    positions.push(position);
  }
  return positions;
}

/**
 * `transit_hub` is the transit hub the package is at, else the nearest one ahead; on a route without transit
 * hubs it is the hub the package is at (the origin hub before any).
 */
function resolvePlace(place: Place, position: number, length: number): number {
  const destinationHub = length - 2;
  switch (place) {
    case 'origin':
      return 0;
    case 'origin_hub':
      return 1;
    case 'destination_hub':
      return destinationHub;
    case 'destination':
      return length - 1;
    case 'transit_hub': {
      const firstTransit = 2;
      const lastTransit = destinationHub - 1;
      if (lastTransit < firstTransit) return Math.min(Math.max(position, 1), destinationHub);
      return Math.min(Math.max(position, firstTransit), lastTransit);
    }
  }
}

/** `run` positions over `hubs`, in order, the first on the first hub and the last on the last. */
function spread(hubs: readonly number[], run: number): number[] {
  const count = hubs.length;
  return Array.from({ length: run }, (_, j) => {
    const k =
      run >= count
        ? Math.floor((j * count) / run)
        : run === 1
          ? 0
          : Math.round((j * (count - 1)) / (run - 1));
    return hubs[k] ?? hubs[0] ?? 1;
  });
}

/**
 * The hubs still ahead, in travel order: towards the destination hub, or back towards the origin hub once
 * the package is returning. At the last hub of the way, further scans happen at that hub.
 */
function hubsAhead(position: number, destinationHub: number, returning: boolean): number[] {
  const hubs: number[] = [];
  if (returning) for (let k = Math.min(position - 1, destinationHub); k >= 1; k--) hubs.push(k);
  else for (let k = Math.max(position + 1, 1); k <= destinationHub; k++) hubs.push(k);
  return hubs.length > 0 ? hubs : [Math.min(Math.max(position, 1), destinationHub)];
}

function momentOf(
  status: TrackingStatus,
  position: number,
  previous: { position: number; moment: Moment } | undefined,
  length: number,
): Moment {
  if (status === 'exception') return exceptionMoment(position, previous, length);
  if (status !== 'in_transit') return status;
  if (!previous || previous.position !== position) return 'arrived';
  return previous.moment === 'departed' || previous.moment === 'processing' ? 'processing' : 'departed';
}

/**
 * An exception before the carrier has the package is a pickup that failed, at the sender's; one at
 * the door (after going out for delivery, or at the recipient's) is a delivery attempt that failed;
 * anything in between is a delay or hold in the network.
 */
function exceptionMoment(
  position: number,
  previous: { position: number; moment: Moment } | undefined,
  length: number,
): ExceptionMoment {
  if (!previous || previous.moment === 'pre_transit' || previous.moment === 'pickup_exception') {
    return 'pickup_exception';
  }
  if (previous.moment === 'out_for_delivery' || position === length - 1) return 'delivery_exception';
  return 'transit_exception';
}

/**
 * Where a parcel is, for a plan that goes on from its latest event: the stop with that event's
 * location (the last one, when a route passes a city twice), or for a location the route does not
 * know (a custom event's) the stop its status implies; and what happened there.
 */
function whereItIs(
  latest: { status: TrackingStatus; location: string },
  route: readonly RouteStop[],
): { position: number; moment: Moment } {
  const found = route.findLastIndex((stop) => stop.location === latest.location);
  const position =
    found >= 0
      ? found
      : latest.status === 'pre_transit' || latest.status === 'accepted'
        ? 0
        : latest.status === 'out_for_delivery' || latest.status === 'delivered'
          ? route.length - 1
          : 1;
  // Only an in_transit or exception step reads what came before it, and none is forced after an exception.
  const moment: Moment =
    latest.status === 'in_transit'
      ? 'arrived'
      : latest.status === 'exception'
        ? 'transit_exception'
        : latest.status;
  return { position, moment };
}
