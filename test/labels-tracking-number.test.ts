import { createHash } from 'node:crypto';
import { getTracking } from 'ts-tracking-number';
import { describe, expect, it } from 'vitest';
import {
  carrierOfTrackingNumber,
  isValidTrackingNumber,
  TRACKING_FORMATS,
  type TrackingCarrier,
  trackingNumberFor,
} from '../src/labels/tracking-number.js';

const CARRIERS: TrackingCarrier[] = ['ups', 'usps', 'fedex', 'dhl_express'];

/** How ts-tracking-number, the third-party detector, names our carriers. */
const DETECTED_AS: Record<TrackingCarrier, string> = {
  ups: 'ups',
  usps: 'usps',
  fedex: 'fedex',
  dhl_express: 'dhl',
};

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** Label ids shaped like real ones (`lbl_` and 26 Crockford base-32 characters), the same on every run. */
function labelIds(count: number): string[] {
  return Array.from({ length: count }, (_, index) => {
    const digest = createHash('sha256').update(`label ${index}`).digest();
    const suffix = Array.from({ length: 26 }, (_, at) => CROCKFORD[(digest[at] ?? 0) % 32]).join('');
    return `lbl_${suffix}`;
  });
}

describe('trackingNumberFor', () => {
  const ids = labelIds(3000);

  it.each(CARRIERS)('gives the same label the same %s number every time', (carrier) => {
    for (const id of ids.slice(0, 50)) {
      expect(trackingNumberFor(carrier, id)).toBe(trackingNumberFor(carrier, id));
    }
  });

  it.each(CARRIERS)('gives 3000 labels 3000 different %s numbers', (carrier) => {
    const numbers = new Set(ids.map((id) => trackingNumberFor(carrier, id)));
    expect(numbers.size).toBe(ids.length);
  });

  it.each(CARRIERS)('writes %s numbers in the carrier format with a correct check digit', (carrier) => {
    for (const id of ids) {
      const number = trackingNumberFor(carrier, id);
      expect(number).toMatch(TRACKING_FORMATS[carrier].pattern);
      expect(isValidTrackingNumber(carrier, number)).toBe(true);
      expect(carrierOfTrackingNumber(number)).toBe(carrier);
    }
  });

  it.each(CARRIERS)('has %s numbers that a third-party detector validates and names correctly', (carrier) => {
    for (const id of ids.slice(0, 400)) {
      const number = trackingNumberFor(carrier, id);
      const detected = getTracking(number);
      expect(detected, number).toBeDefined();
      expect(detected?.courier.code, number).toBe(DETECTED_AS[carrier]);
    }
  });

  it('uses the real prefixes: 1Z for UPS, an IMpb channel and service type code for USPS', () => {
    const [id = ''] = ids;
    expect(trackingNumberFor('ups', id)).toMatch(/^1Z[0-9A-Z]{6}03[0-9]{7}[0-9]$/);
    expect(trackingNumberFor('usps', id)).toMatch(/^94001[0-9]{17}$/);
    expect(trackingNumberFor('fedex', id)).toMatch(/^[1-9][0-9]{11}$/);
    expect(trackingNumberFor('dhl_express', id)).toMatch(/^[1-9][0-9]{9}$/);
  });

  it('gives a new valid number for each further attempt, for the store to use on a clash', () => {
    const [id = ''] = ids;
    for (const carrier of CARRIERS) {
      const attempts = [0, 1, 2].map((attempt) => trackingNumberFor(carrier, id, attempt));
      expect(new Set(attempts).size).toBe(3);
      expect(attempts[0]).toBe(trackingNumberFor(carrier, id));
      for (const number of attempts) expect(isValidTrackingNumber(carrier, number)).toBe(true);
    }
  });

  it('refuses a carrier it has no format for', () => {
    expect(() => trackingNumberFor('pigeon_post', 'lbl_X')).toThrow(/pigeon_post/);
  });
});

describe('isValidTrackingNumber', () => {
  it('accepts published example numbers', () => {
    expect(isValidTrackingNumber('ups', '1Z999AA10123456784')).toBe(true);
    expect(isValidTrackingNumber('usps', '9400111202555842332669')).toBe(true);
    expect(isValidTrackingNumber('fedex', '986578788855')).toBe(true);
  });

  it.each(CARRIERS)('rejects a %s number whose check digit is wrong', (carrier) => {
    for (const id of labelIds(50)) {
      const number = trackingNumberFor(carrier, id);
      const check = Number(number.at(-1));
      const wrong = `${number.slice(0, -1)}${(check + 1) % 10}`;
      // Each check digit is a function of the rest, so any other digit is wrong.
      expect(isValidTrackingNumber(carrier, wrong), wrong).toBe(false);
    }
  });

  it("rejects another carrier's number, a wrong length and an unknown carrier", () => {
    const ups = trackingNumberFor('ups', 'lbl_A');
    expect(isValidTrackingNumber('fedex', ups)).toBe(false);
    expect(isValidTrackingNumber('dhl_express', '12345678901')).toBe(false);
    expect(isValidTrackingNumber('pigeon_post', ups)).toBe(false);
    expect(carrierOfTrackingNumber('not a number')).toBeNull();
  });
});

describe('TRACKING_FORMATS', () => {
  it.each(CARRIERS)('has a valid %s example that the third-party detector names', (carrier) => {
    const { example } = TRACKING_FORMATS[carrier];
    expect(isValidTrackingNumber(carrier, example)).toBe(true);
    expect(getTracking(example)?.courier.code).toBe(DETECTED_AS[carrier]);
  });
});
