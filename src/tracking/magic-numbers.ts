import type { Address } from '../addresses/schema.js';
import type { Scenario } from '../scenarios/files.js';
import type { TrackingStatus } from '../scenarios/vocabulary.js';
import { estimatedDelivery, planTimeline, type TimelineStep } from './timeline.js';

/**
 * Magic tracking numbers: documented numbers that answer a fixed timeline for any account, without a
 * shipment or a label, so a merchant can test each tracking state of its UI on demand.
 *
 * They are USPS Intelligent Mail package barcodes, 22 digits, check digit included, so they pass the same
 * format and check-digit validation as real USPS numbers (and the sandbox's own): `94` channel, `001`
 * service type, the 9-digit mailer id `000000000`, a 7-digit serial `00000NN` and the mod-10 check digit.
 * Generated sandbox numbers never have a mailer id starting with 0, so the two cannot collide. `NN` is 11 to
 * 17 for the tracking statuses in the specification's order and 21 to 27 for the built-in scenarios.
 */

export interface MagicTrackingNumber {
  number: string;
  scenario: string;
  /** The status the number answers. */
  finalStatus: TrackingStatus;
  carrier: 'usps';
  /**
   * `through_status`: the scenario up to and including its last step of `finalStatus`;
   * `whole_scenario`: every step of the scenario.
   */
  plays: 'through_status' | 'whole_scenario';
}

const byStatus = (number: string, finalStatus: TrackingStatus, scenario: string): MagicTrackingNumber => ({
  number,
  scenario,
  finalStatus,
  carrier: 'usps',
  plays: 'through_status',
});

const byScenario = (number: string, scenario: string, finalStatus: TrackingStatus): MagicTrackingNumber => ({
  number,
  scenario,
  finalStatus,
  carrier: 'usps',
  plays: 'whole_scenario',
});

export const MAGIC_TRACKING_NUMBERS: readonly MagicTrackingNumber[] = [
  byStatus('9400100000000000000112', 'pre_transit', 'standard'),
  byStatus('9400100000000000000129', 'accepted', 'standard'),
  byStatus('9400100000000000000136', 'in_transit', 'standard'),
  byStatus('9400100000000000000143', 'out_for_delivery', 'standard'),
  byStatus('9400100000000000000150', 'delivered', 'standard'),
  byStatus('9400100000000000000167', 'exception', 'exception_lost'),
  byStatus('9400100000000000000174', 'returned', 'returned_to_sender'),
  byScenario('9400100000000000000211', 'standard', 'delivered'),
  byScenario('9400100000000000000228', 'express', 'delivered'),
  byScenario('9400100000000000000235', 'exception_then_delivered', 'delivered'),
  byScenario('9400100000000000000242', 'exception_lost', 'exception'),
  byScenario('9400100000000000000259', 'returned_to_sender', 'returned'),
  byScenario('9400100000000000000266', 'delayed_weather', 'delivered'),
  byScenario('9400100000000000000273', 'stuck_pre_transit', 'pre_transit'),
];

/** The imaginary shipment behind every magic number: fixed so that the answer never changes. */
export const MAGIC_SHIPMENT = {
  carrier: 'usps',
  service: 'priority',
  serviceDays: 2,
  /** Monday 2026-01-05T09:00:00Z: in the past, so every step has already happened on any clock. */
  startedAt: Date.UTC(2026, 0, 5, 9, 0, 0),
  from: {
    name: 'Ada Lovelace',
    address1: '417 Montgomery St',
    city: 'San Francisco',
    state: 'CA',
    zip: '94104',
    country: 'US',
  },
  to: {
    name: 'Grace Hopper',
    address1: '350 5th Ave',
    city: 'New York',
    state: 'NY',
    zip: '10118',
    country: 'US',
  },
} as const satisfies { from: Address; to: Address } & Record<string, unknown>;

const byNumber = new Map(MAGIC_TRACKING_NUMBERS.map((entry) => [entry.number, entry]));

export function findMagicTrackingNumber(number: string): MagicTrackingNumber | undefined {
  return byNumber.get(number);
}

/**
 * The fixed answer of a magic number, oldest step first, or `undefined` for any other number. The scenario
 * is looked up by name among the loaded ones, so a user's own `standard.yaml` changes the magic numbers that
 * play `standard`; a number whose status the replacement never reaches answers `undefined`, like an unknown one.
 * All numbers of one scenario share one journey (the timeline is seeded by the scenario's name), so the
 * status numbers of `standard` show successive moments of the same trip.
 */
export function magicTimeline(
  number: string,
  scenarios: ReadonlyMap<string, Scenario>,
  seed: string,
): { carrier: string; steps: TimelineStep[]; estimatedDelivery: number } | undefined {
  const entry = byNumber.get(number);
  const scenario = entry && scenarios.get(entry.scenario);
  if (!entry || !scenario) return undefined;

  const { carrier, from, to, startedAt, serviceDays } = MAGIC_SHIPMENT;
  const timeline = planTimeline(
    { seed, labelId: `magic:${scenario.name}`, carrier, from, to, startedAt },
    scenario,
  );
  const end =
    entry.plays === 'whole_scenario'
      ? timeline.length
      : timeline.findLastIndex((step) => step.status === entry.finalStatus) + 1;
  if (end === 0) return undefined;
  return {
    carrier,
    steps: timeline.slice(0, end),
    estimatedDelivery: estimatedDelivery(timeline, scenario, startedAt, serviceDays),
  };
}
