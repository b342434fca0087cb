import { describe, expect, it } from 'vitest';
import { BUILTIN_SCENARIOS_DIR, loadScenarios, type Scenario } from '../src/scenarios/files.js';
import { TRACKING_STATUSES } from '../src/scenarios/vocabulary.js';
import { describeStep, type Moment } from '../src/tracking/descriptions.js';
import { carrierGateways, formatLocation, planRoute } from '../src/tracking/journey.js';
import {
  findMagicTrackingNumber,
  MAGIC_TRACKING_NUMBERS,
  magicTimeline,
} from '../src/tracking/magic-numbers.js';
import { estimatedDelivery, planTimeline, type TimelineInput } from '../src/tracking/timeline.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const STARTED_AT = Date.UTC(2026, 10, 22, 8, 23, 14);
const scenarios = loadScenarios([BUILTIN_SCENARIOS_DIR]);
const scenario = (name: string): Scenario => scenarios.get(name)!;

const austin = { city: 'Austin', state: 'TX', zip: '78701', country: 'US' };
const boston = { city: 'Boston', state: 'MA', zip: '02108', country: 'US' };
const berlin = { city: 'Berlin', state: 'Berlin', zip: '10115', country: 'DE' };
const sydney = { city: 'Sydney', state: 'NSW', zip: '2000', country: 'AU' };

const input = (overrides: Partial<TimelineInput> = {}): TimelineInput => ({
  seed: 'sandbox',
  labelId: 'lbl_01JD3S5Z7QK2N8W4X6Y9A0B1C2',
  carrier: 'ups',
  from: austin,
  to: boston,
  startedAt: STARTED_AT,
  ...overrides,
});

const LOCATION = /^[^,]+(, [A-Z]{2,3})?, [A-Z]{2}$/;
const CARRIERS = ['usps', 'ups', 'fedex', 'dhl_express'];
const JOURNEYS = [
  [austin, boston],
  [austin, berlin],
  [berlin, sydney],
  [boston, boston],
] as const;

/** Every wording a carrier has for a moment, at the city of `location`. */
const wordings = (carrier: string, moment: Moment, location = 'Austin') =>
  [0, 0.5, 0.99].map((draw) =>
    describeStep({ carrier, moment, place: 'origin', city: location.split(',')[0]! }, () => draw),
  );

describe('planTimeline', () => {
  it('gives the same label the same timeline every time', () => {
    expect(planTimeline(input(), scenario('standard'))).toEqual(planTimeline(input(), scenario('standard')));
  });

  it('gives different labels different hubs and minutes', () => {
    const timelines = Array.from({ length: 30 }, (_, i) =>
      planTimeline(input({ labelId: `lbl_${i}` }), scenario('standard')),
    );
    const routes = new Set(timelines.map((timeline) => timeline.map((step) => step.location).join(' > ')));
    const times = new Set(timelines.map((timeline) => timeline[3]?.occurredAt));
    expect(routes.size).toBeGreaterThan(1);
    expect(times.size).toBeGreaterThan(20);
    expect(planTimeline(input({ seed: 'other' }), scenario('standard'))).not.toEqual(
      planTimeline(input(), scenario('standard')),
    );
  });

  it('keeps steps in order, the first at the label creation, with plausible locations', () => {
    for (const current of scenarios.values()) {
      for (const carrier of CARRIERS) {
        for (const [from, to] of JOURNEYS) {
          for (const labelId of ['lbl_a', 'lbl_b', 'lbl_c']) {
            const timeline = planTimeline(input({ carrier, from, to, labelId }), current);
            expect(timeline.map((step) => step.status)).toEqual(current.steps.map((step) => step.status));
            expect(timeline.map((step) => step.index)).toEqual(current.steps.map((_, i) => i));
            expect(timeline[0]?.occurredAt).toBe(STARTED_AT);
            let nominal = STARTED_AT;
            timeline.forEach((step, i) => {
              nominal += current.steps[i]?.afterMs ?? 0;
              if (i > 0) expect(step.occurredAt).toBeGreaterThanOrEqual(timeline[i - 1]!.occurredAt);
              expect(Math.abs(step.occurredAt - nominal)).toBeLessThanOrEqual(10 * 60_000);
              expect(step.occurredAt % 1000).toBe(STARTED_AT % 1000);
              expect(step.location).toMatch(LOCATION);
              expect(step.description).not.toMatch(/[{}]/);
              expect(step.description.length).toBeGreaterThan(3);
            });
          }
        }
      }
    }
  });

  it('writes US locations as City, ST, US', () => {
    for (const step of planTimeline(input(), scenario('standard'))) {
      expect(step.location).toMatch(/^[A-Za-z .]+, [A-Z]{2}, US$/);
    }
  });

  it('starts at the sender and delivers at the recipient', () => {
    const timeline = planTimeline(input({ to: sydney }), scenario('standard'));
    expect(timeline[0]?.location).toBe('Austin, TX, US');
    expect(timeline.at(-1)?.location).toBe('Sydney, NSW, AU');
    expect(timeline.find((step) => step.status === 'out_for_delivery')?.location).toBe('Sydney, NSW, AU');
  });

  it('routes international journeys through the carrier gateways', () => {
    for (const carrier of ['ups', 'fedex', 'dhl_express']) {
      const locations = planTimeline(input({ carrier, to: berlin }), scenario('standard')).map(
        (s) => s.location,
      );
      expect(locations).toEqual(expect.arrayContaining([carrierGateways(carrier, 'US')[0]]));
      expect(locations).toEqual(expect.arrayContaining([carrierGateways(carrier, 'DE')[0]]));
      expect(locations.indexOf(carrierGateways(carrier, 'US')[0]!)).toBeLessThan(
        locations.indexOf(carrierGateways(carrier, 'DE')[0]!),
      );
    }
    // USPS leaves through the International Service Center of the sender's region.
    const usps = planTimeline(input({ carrier: 'usps', to: berlin }), scenario('standard'));
    expect(usps.map((step) => step.location)).toContain('Chicago, IL, US');
  });

  it('takes about three days for the standard scenario and ends delivered', () => {
    const timeline = planTimeline(input(), scenario('standard'));
    const delivered = timeline.at(-1)!;
    expect(delivered.status).toBe('delivered');
    expect(delivered.occurredAt - STARTED_AT).toBeGreaterThan(2.5 * DAY);
    expect(delivered.occurredAt - STARTED_AT).toBeLessThan(3.5 * DAY);
    expect(estimatedDelivery(timeline, scenario('standard'), STARTED_AT, 4)).toBe(delivered.occurredAt);
  });

  it('delivers express the next day', () => {
    const timeline = planTimeline(input(), scenario('express'));
    expect(timeline.at(-1)?.occurredAt).toBeLessThan(STARTED_AT + 1.5 * DAY);
  });

  it('estimates from the service days when the scenario never delivers', () => {
    const lost = planTimeline(input(), scenario('exception_lost'));
    expect(estimatedDelivery(lost, scenario('exception_lost'), STARTED_AT, 3)).toBe(STARTED_AT + 3 * DAY);
  });

  it('brings returned packages back towards the sender', () => {
    const timeline = planTimeline(input({ to: berlin }), scenario('returned_to_sender'));
    const returned = timeline.filter((step) => step.status === 'returned');
    expect(returned[0]?.location).toMatch(/, DE$/);
    expect(returned.at(-1)?.location).toBe('Austin, TX, US');
  });

  it('arrives at and departs from a hub in the carrier wording', () => {
    const timeline = planTimeline(input({ carrier: 'ups' }), scenario('standard'));
    const inTransit = timeline.filter((step) => step.status === 'in_transit').map((step) => step.description);
    expect(inTransit[0]).toBe('Arrived at Facility');
    expect(inTransit[1]).toBe('Departed from Facility');
    const dhl = planTimeline(input({ carrier: 'dhl_express', to: berlin }), scenario('standard'));
    const atLeipzig = dhl.filter((step) => step.location === 'Leipzig, DE').map((step) => step.description);
    expect(atLeipzig[0]).toMatch(/^Arrived at (DHL )?Sort Facility Leipzig$/);
  });

  it('words an exception by when it happens: a failed pickup, a delay on the way, a failed attempt at the door', () => {
    const exceptionAfter = (carrier: string, before: Scenario['steps'], after?: TimelineInput['after']) => {
      const steps = [...before, { afterMs: HOUR, status: 'exception' as const }];
      const timeline = planTimeline(input({ carrier, after }), { name: 'x', description: 'x', steps });
      return timeline.at(-1)!;
    };
    for (const carrier of [...CARRIERS, 'a_carrier_without_a_table']) {
      // Before the carrier has the package: at the sender's, a pickup that failed.
      for (const early of [
        exceptionAfter(carrier, []),
        exceptionAfter(carrier, [{ afterMs: 0, status: 'pre_transit' }]),
      ]) {
        expect([carrier, early.location]).toEqual([carrier, 'Austin, TX, US']);
        expect(early.description).toBeOneOf(wordings(carrier, 'pickup_exception', early.location));
        expect(early.description).toMatch(/pick ?up/i);
      }
      // On the way: at the hub it reached, a delay.
      const onTheWay = exceptionAfter(carrier, [
        { afterMs: 0, status: 'pre_transit' },
        { afterMs: HOUR, status: 'accepted' },
        { afterMs: HOUR, status: 'in_transit' },
      ]);
      expect(onTheWay.location).not.toBe('Austin, TX, US');
      expect(onTheWay.description).toBeOneOf(wordings(carrier, 'transit_exception', onTheWay.location));
      // Out for delivery: at the recipient's, an attempt that failed.
      const atTheDoor = exceptionAfter(carrier, [
        { afterMs: 0, status: 'pre_transit' },
        { afterMs: HOUR, status: 'out_for_delivery' },
      ]);
      expect(atTheDoor.location).toBe('Boston, MA, US');
      expect(atTheDoor.description).toBeOneOf(wordings(carrier, 'delivery_exception', atTheDoor.location));
    }
    // The three kinds are worded apart.
    const usps = (moment: Moment) => wordings('usps', moment, 'Austin');
    expect(
      new Set([...usps('pickup_exception'), ...usps('transit_exception'), ...usps('delivery_exception')])
        .size,
    ).toBe(6);
  });

  it('goes on from where the parcel is when a plan continues its journey', () => {
    const standard = planTimeline(input(), scenario('standard'));
    const hub = standard.find((step) => step.status === 'in_transit')!;
    const forced = (after: TimelineInput['after']) =>
      planTimeline(input({ after }), {
        name: 'forced',
        description: 'x',
        steps: [{ afterMs: 0, status: 'exception' }],
      })[0]!;
    // A parcel at a hub is held there; one waiting at the sender's misses its pickup there.
    expect(forced({ status: 'in_transit', location: hub.location }).location).toBe(hub.location);
    const notPickedUp = forced({ status: 'pre_transit', location: 'Austin, TX, US' });
    expect(notPickedUp.location).toBe('Austin, TX, US');
    expect(notPickedUp.description).toMatch(/pick ?up/i);
    // Out for delivery, wherever the event said it was (a custom location): the attempt is at the door.
    const attempt = forced({ status: 'out_for_delivery', location: 'Somewhere, ZZ' });
    expect(attempt.location).toBe('Boston, MA, US');
    expect(attempt.description).toBeOneOf(wordings('ups', 'delivery_exception'));
  });

  it('fills {city} in a scenario description', () => {
    const custom: Scenario = {
      name: 'custom',
      description: 'x',
      steps: [
        { afterMs: 0, status: 'pre_transit' },
        { afterMs: HOUR, status: 'delivered', description: 'Left with a neighbour in {city}' },
      ],
    };
    expect(planTimeline(input(), custom)[1]?.description).toBe('Left with a neighbour in Boston');
  });

  it('plans a timeline well within a millisecond', () => {
    for (let i = 0; i < 200; i++) planTimeline(input({ labelId: `warm_${i}` }), scenario('standard'));
    const started = performance.now();
    for (let i = 0; i < 500; i++)
      planTimeline(input({ labelId: `lbl_${i}`, to: berlin }), scenario('standard'));
    expect((performance.now() - started) / 500).toBeLessThan(1);
  });
});

describe('planRoute', () => {
  const rng = () => 0.5;

  it('picks US hubs by ZIP region', () => {
    const route = planRoute(
      'usps',
      { ...austin, zip: '94104', city: 'San Francisco', state: 'CA' },
      boston,
      rng,
    );
    expect(route.map((stop) => stop.place)).toEqual([
      'origin',
      'origin_hub',
      'destination_hub',
      'destination',
    ]);
    expect(route[1]?.location).toBe('Oakland, CA, US');
    expect(route[2]?.location).toBe('Springfield, MA, US');
  });

  it('serves a country without hubs from the address city', () => {
    const lima = { city: 'Lima', state: 'LIM', zip: '15001', country: 'PE' };
    const route = planRoute('dhl_express', lima, boston, rng);
    expect(route[1]?.location).toBe('Lima, LIM, PE');
    expect(route.map((stop) => stop.location)).toContain('Cincinnati, OH, US');
  });
});

describe('formatLocation', () => {
  it('writes short state codes and leaves spelled-out regions out', () => {
    expect(formatLocation({ city: 'Memphis', state: 'TN', country: 'US' })).toBe('Memphis, TN, US');
    expect(formatLocation({ city: 'Sydney', state: 'NSW', country: 'AU' })).toBe('Sydney, NSW, AU');
    expect(formatLocation({ city: 'London', state: 'Greater London', country: 'GB' })).toBe('London, GB');
    expect(formatLocation({ city: 'Leipzig', country: 'DE' })).toBe('Leipzig, DE');
  });
});

describe('magic tracking numbers', () => {
  it('has one number per tracking status and one per built-in scenario', () => {
    const byStatus = MAGIC_TRACKING_NUMBERS.filter((entry) => entry.plays === 'through_status');
    const byScenario = MAGIC_TRACKING_NUMBERS.filter((entry) => entry.plays === 'whole_scenario');
    expect(byStatus.map((entry) => entry.finalStatus)).toEqual([...TRACKING_STATUSES]);
    expect(byScenario.map((entry) => entry.scenario).sort()).toEqual([...scenarios.keys()].sort());
    expect(new Set(MAGIC_TRACKING_NUMBERS.map((entry) => entry.number)).size).toBe(
      MAGIC_TRACKING_NUMBERS.length,
    );
  });

  it('uses valid USPS numbers that generated ones cannot take', () => {
    for (const { number, carrier } of MAGIC_TRACKING_NUMBERS) {
      expect(carrier).toBe('usps');
      expect(number).toMatch(/^94001000000000\d{8}$/);
      expect(uspsCheckDigit(number.slice(0, -1))).toBe(Number(number.at(-1)));
    }
  });

  it('answers its final status with the same steps on every call', () => {
    for (const entry of MAGIC_TRACKING_NUMBERS) {
      const answer = magicTimeline(entry.number, scenarios, 'sandbox');
      expect(answer, entry.number).toBeDefined();
      expect(answer?.carrier).toBe('usps');
      expect(answer?.steps.at(-1)?.status, entry.number).toBe(entry.finalStatus);
      expect(answer?.steps[0]?.occurredAt).toBe(Date.UTC(2026, 0, 5, 9, 0, 0));
      expect(magicTimeline(entry.number, loadScenarios([BUILTIN_SCENARIOS_DIR]), 'sandbox')).toEqual(answer);
    }
  });

  it('shows the moments of one journey under the numbers of one scenario', () => {
    const delivered = magicTimeline('9400100000000000000150', scenarios, 'sandbox')!;
    const inTransit = magicTimeline('9400100000000000000136', scenarios, 'sandbox')!;
    expect(delivered.steps.slice(0, inTransit.steps.length)).toEqual(inTransit.steps);
    expect(inTransit.estimatedDelivery).toBe(delivered.steps.at(-1)?.occurredAt);
    expect(magicTimeline('9400100000000000000211', scenarios, 'sandbox')).toEqual(delivered);
    expect(delivered.steps.at(-1)?.location).toBe('New York, NY, US');
  });

  it('answers nothing for other numbers', () => {
    expect(findMagicTrackingNumber('9400100000000000000281')).toBeUndefined();
    expect(magicTimeline('9400111202555842332669', scenarios, 'sandbox')).toBeUndefined();
  });
});

/** Mod 10, weights 3 and 1 alternating from the rightmost digit: the IMpb check digit. */
function uspsCheckDigit(body: string): number {
  const sum = [...body].reverse().reduce((acc, digit, i) => acc + Number(digit) * (i % 2 === 0 ? 3 : 1), 0);
  return (10 - (sum % 10)) % 10;
}
