import { createHash } from 'node:crypto';

/**
 * Tracking numbers in each carrier's real format, check digit included, so that merchants' own
 * carrier-detection and validation code accepts sandbox numbers as it accepts real ones.
 *
 * The digits come from a SHA-256 of the label id: the same label always gets the same number. The
 * carriers' formats hold between 30 (DHL Express) and 55 bits, fewer than a label id, so two labels
 * can in rare cases hash to the same number; the store keeps tracking numbers unique and, on a clash,
 * asks again with the next `attempt`.
 */

export type TrackingCarrier = 'usps' | 'ups' | 'fedex' | 'dhl_express';

export interface TrackingFormat {
  carrier: string;
  format: string;
  pattern: RegExp;
  checkDigit: string;
  example: string;
}

/** docs/reference.md's table of formats; `example` is a valid number of that format. */
export const TRACKING_FORMATS: Readonly<Record<TrackingCarrier, TrackingFormat>> = {
  ups: {
    carrier: 'UPS',
    format:
      '18 characters: `1Z`, 6-character shipper number, 2-digit service indicator (`03`), 7-digit package number, check digit',
    pattern: /^1Z[0-9A-Z]{15}[0-9]$/,
    checkDigit:
      'UPS mod 10 over the 15 characters after `1Z` (letters as (ASCII − 63) mod 10, every second character doubled)',
    example: '1Z5R89390357567127',
  },
  usps: {
    carrier: 'USPS',
    format:
      '22-digit IMpb: `94` channel, `001` service type code, 9-digit mailer id (`9…`), 7-digit serial, check digit',
    pattern: /^9[2-5][0-9]{20}$/,
    checkDigit: 'mod 10, weights 3 and 1 alternating from the rightmost digit before the check digit',
    example: '9400111202555842332669',
  },
  fedex: {
    carrier: 'FedEx',
    format: '12 digits: 11-digit serial, check digit',
    pattern: /^[0-9]{12}$/,
    checkDigit:
      'mod 11 of the serial weighted 1, 3, 7 repeating from the right, a remainder of 10 written as 0',
    example: '986578788855',
  },
  dhl_express: {
    carrier: 'DHL Express',
    format: '10 digits: 9-digit waybill serial, check digit',
    pattern: /^[0-9]{10}$/,
    checkDigit: 'the serial mod 7',
    example: '3318810025',
  },
};

const TRACKING_CARRIERS = Object.keys(TRACKING_FORMATS) as TrackingCarrier[];

export function isTrackingCarrier(value: string): value is TrackingCarrier {
  return Object.hasOwn(TRACKING_FORMATS, value);
}

/**
 * The tracking number of a label. `attempt` is 0 for the label's first number; a store that finds
 * the number already taken asks again with 1, 2, ... and keeps the number it stored.
 */
export function trackingNumberFor(carrier: string, labelId: string, attempt = 0): string {
  if (!isTrackingCarrier(carrier)) throw new Error(`no tracking-number format for carrier ${carrier}`);
  const take = digitSource(attempt === 0 ? `${carrier}:${labelId}` : `${carrier}:${labelId}:${attempt}`);
  const digits = (count: number) => Array.from({ length: count }, () => take(10)).join('');
  // Real numbers of these formats do not start with 0, and a leading 0 would also look dropped.
  const leadingDigits = (count: number) => `${1 + take(9)}${digits(count - 1)}`;

  switch (carrier) {
    case 'ups': {
      const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
      const shipper = Array.from({ length: 6 }, () => alphabet[take(alphabet.length)]).join('');
      const body = `${shipper}03${digits(7)}`;
      return `1Z${body}${upsCheckDigit(body)}`;
    }
    case 'usps': {
      // 9-digit mailer ids start with 9; USPS gives shorter ones (with longer serials) only to big mailers.
      const body = `940019${digits(8)}${digits(7)}`;
      return `${body}${uspsCheckDigit(body)}`;
    }
    case 'fedex': {
      const serial = leadingDigits(11);
      return `${serial}${fedexCheckDigit(serial)}`;
    }
    case 'dhl_express': {
      const serial = leadingDigits(9);
      return `${serial}${dhlExpressCheckDigit(serial)}`;
    }
  }
}

/** Whether `value` is a well-formed tracking number of this carrier, check digit included. */
export function isValidTrackingNumber(carrier: string, value: string): boolean {
  if (!isTrackingCarrier(carrier) || !TRACKING_FORMATS[carrier].pattern.test(value)) return false;
  const body = value.slice(0, -1);
  const check = Number(value.at(-1));
  switch (carrier) {
    case 'ups':
      return upsCheckDigit(body.slice(2)) === check;
    case 'usps':
      return uspsCheckDigit(body) === check;
    case 'fedex':
      return fedexCheckDigit(body) === check;
    case 'dhl_express':
      return dhlExpressCheckDigit(body) === check;
  }
}

/**
 * The carrier whose format `value` has, as `GET /tracking/:n` needs without being told. The formats
 * have distinct lengths, so at most one matches.
 */
export function carrierOfTrackingNumber(value: string): TrackingCarrier | null {
  return TRACKING_CARRIERS.find((carrier) => isValidTrackingNumber(carrier, value)) ?? null;
}

/** Draws uniform values below a radix, one after another, from the SHA-256 of `seed`. */
function digitSource(seed: string): (radix: number) => number {
  let pool = BigInt(`0x${createHash('sha256').update(seed).digest('hex')}`);
  return (radix) => {
    const value = Number(pool % BigInt(radix));
    pool /= BigInt(radix);
    return value;
  };
}

function upsCheckDigit(body: string): number {
  let sum = 0;
  for (const [index, char] of [...body].entries()) {
    const value = /[0-9]/.test(char) ? Number(char) : (char.charCodeAt(0) - 63) % 10;
    sum += index % 2 === 1 ? value * 2 : value;
  }
  return (10 - (sum % 10)) % 10;
}

function uspsCheckDigit(body: string): number {
  let sum = 0;
  for (const [fromRight, char] of [...body].reverse().entries()) {
    sum += Number(char) * (fromRight % 2 === 0 ? 3 : 1);
  }
  return (10 - (sum % 10)) % 10;
}

function fedexCheckDigit(serial: string): number {
  const weights = [1, 3, 7];
  let sum = 0;
  for (const [fromRight, char] of [...serial].reverse().entries()) {
    sum += Number(char) * (weights[fromRight % 3] ?? 0);
  }
  return (sum % 11) % 10;
}

function dhlExpressCheckDigit(serial: string): number {
  return Number(BigInt(serial) % 7n);
}
