// The library without its 80 languages' names: only the code tables are needed here.
import countries from 'i18n-iso-countries/index.js';
import type { Address, Parcel } from '../../addresses/schema.js';
import type { LABEL_FORMATS, LABEL_SIZES } from '../schema.js';

/**
 * What a label shows: the document every renderer draws from, its page sizes in inches, points and
 * printer dots, and the facts derived from it that the label prints or encodes (routing code, weight
 * and dimensions, country name, the 2D symbol's choice and payload).
 */

export type LabelSize = (typeof LABEL_SIZES)[number];
export type LabelFormat = (typeof LABEL_FORMATS)[number];

export interface LabelDocument {
  labelId: string;
  trackingNumber: string;
  carrier: { slug: string; name: string };
  service: { code: string; name: string };
  from: Address;
  to: Address;
  parcel: Parcel;
  reference: string | null;
  /** Milliseconds since the epoch on the account's clock; also the PDF's creation date. */
  createdAt: number;
  size: LabelSize;
  format: LabelFormat;
}

/** Test keys make no real labels, and every label says so. */
export const SAMPLE_MARK = 'SAMPLE - NOT FOR SHIPPING';

/** Thermal label printers print at 203 dpi (8 dots per millimetre). */
export const DOTS_PER_INCH = 203;
export const POINTS_PER_DOT = 72 / DOTS_PER_INCH;

export interface PageGeometry {
  widthIn: number;
  heightIn: number;
  widthPt: number;
  heightPt: number;
  widthDots: number;
  heightDots: number;
}

function page(widthIn: number, heightIn: number): PageGeometry {
  return {
    widthIn,
    heightIn,
    widthPt: widthIn * 72,
    heightPt: heightIn * 72,
    widthDots: Math.round(widthIn * DOTS_PER_INCH),
    heightDots: Math.round(heightIn * DOTS_PER_INCH),
  };
}

export const PAGE_SIZES: Readonly<Record<LabelSize, PageGeometry>> = {
  '4x6': page(4, 6),
  '4x8': page(4, 8),
  letter: page(8.5, 11),
};

// ---------------------------------------------------------------------------------------------
// What the label says

/** The sort code printed large: the 5-digit ZIP for US addresses, postal code and country elsewhere. */
export function routingCode(to: Address): string {
  if (to.country === 'US') {
    const zip5 = /^\d{5}/.exec(to.zip.trim())?.[0];
    if (zip5) return `ZIP ${zip5}`;
  }
  return `${to.zip.trim().toUpperCase()} ${to.country}`;
}

const GRAMS_PER_POUND = 453.59237;

export function weightText(grams: number): string {
  return `${(grams / 1000).toFixed(2)} KG / ${(grams / GRAMS_PER_POUND).toFixed(2)} LB`;
}

export function dimensionsText(parcel: Parcel): string {
  return `${parcel.length} x ${parcel.width} x ${parcel.height} CM`;
}

let regionNames: Intl.DisplayNames | undefined;
/** Names asked for before: ICU looks each one up anew, and a label names two countries three times. */
const countryNames = new Map<string, string>();

/** The country's English name, as carriers print it under an address. */
export function countryName(code: string): string {
  let name = countryNames.get(code);
  if (name === undefined) {
    regionNames ??= new Intl.DisplayNames(['en'], { type: 'region', fallback: 'code' });
    name = regionNames.of(code) ?? code;
    // Codes are two capital letters (the schema's), so the map holds a few hundred names at most.
    countryNames.set(code, name);
  }
  return name;
}

/** Plain printable ASCII, for barcode payloads: accents dropped, anything else `?`. */
export function plainAscii(text: string): string {
  return text
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .replace(/[^\x20-\x7e]/g, '?');
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * Text as a label prints it. The API accepts any character in a name or a street, and a label has one
 * line for each: control and format characters (line breaks, tabs, bidirectional overrides that
 * would print a line backwards) become a space, with the spaces around them, and a lone surrogate,
 * which no font or encoding holds, `?`. Printable ASCII, nearly every text, is returned as it is.
 */
export function printableText(text: string): string {
  if (PRINTABLE_ASCII.test(text)) return text;
  return text
    .replace(/\p{Cs}/gu, '?')
    .replace(/\s*[\p{Cc}\p{Cf}\p{Zl}\p{Zp}][\p{Cc}\p{Cf}\p{Zl}\p{Zp}\s]*/gu, ' ')
    .trim();
}

export type TwoDimensionalSymbology = 'maxicode' | 'pdf417' | 'datamatrix';

/** The 2D symbol each carrier prints; bwip-js and ZPL both draw all three. */
const CARRIER_2D: Readonly<Record<string, TwoDimensionalSymbology>> = {
  ups: 'maxicode',
  fedex: 'pdf417',
  usps: 'datamatrix',
  dhl_express: 'pdf417',
};

export function twoDimensionalSymbology(carrierSlug: string): TwoDimensionalSymbology {
  return CARRIER_2D[carrierSlug] ?? 'datamatrix';
}

/**
 * A UPS-style structured carrier message (ANSI MH10.8.3, format 01/96). The primary part, postal
 * code, country and class of service, is what the sorters read first; ZPL takes it apart from the
 * rest, bwip-js finds it at the start of the whole message.
 */
export interface MaxiCodeMessage {
  /** 2 for a numeric US ZIP, 3 for an alphanumeric postal code. */
  mode: 2 | 3;
  postalCode: string;
  countryCode: string;
  serviceClass: string;
  /** Everything after the primary fields, ending in RS EOT. */
  secondary: string;
  /** The whole message as one string, primary fields included. */
  full: string;
}

const RS = '\x1e';
const GS = '\x1d';
const EOT = '\x04';

/**
 * The most of the recipient's city and state that the MaxiCode carries. A mode 2 or 3 symbol holds 84
 * codewords after its primary message; with the fixed fields at their longest, these leave room to
 * spare when every character takes one codeword, as code set A's capitals, digits and space do
 * (`test/labels-render.test.ts` encodes the longest message). Like the street, the rest is printed.
 */
export const MAXICODE_CITY_LENGTH = 18;
export const MAXICODE_STATE_LENGTH = 3;

/** Capitals, digits and single spaces: a character a codeword, accents dropped, anything else a space. */
function maxiCodeText(text: string, length: number): string {
  return plainAscii(text)
    .toUpperCase()
    .replace(/[^0-9A-Z]+/g, ' ')
    .trim()
    .slice(0, length)
    .trim();
}

export function maxiCodeMessage(doc: LabelDocument): MaxiCodeMessage {
  const zipDigits = doc.to.zip.replace(/[\s-]/g, '');
  const usZip = doc.to.country === 'US' && /^(\d{5}|\d{9})$/.test(zipDigits);
  const postalCode = usZip
    ? zipDigits.padEnd(9, '0')
    : plainAscii(doc.to.zip)
        .toUpperCase()
        .replace(/[^0-9A-Z]/g, '')
        .slice(0, 6)
        .padEnd(6, ' ');
  const countryCode = countries.alpha2ToNumeric(doc.to.country) ?? '000';
  const serviceClass = '003';
  const start = Date.UTC(new Date(doc.createdAt).getUTCFullYear(), 0, 1);
  const dayOfYear = String(Math.floor((doc.createdAt - start) / 86_400_000) + 1).padStart(3, '0');
  const shipper = doc.trackingNumber.startsWith('1Z') ? doc.trackingNumber.slice(2, 8) : '';
  const pounds = String(Math.max(1, Math.ceil(doc.parcel.weight / GRAMS_PER_POUND)));
  const fields = [
    doc.trackingNumber,
    'UPSN',
    shipper,
    dayOfYear,
    '',
    '1/1',
    pounds,
    'N',
    // The street would overflow the symbol (about 90 characters after the primary message); UPS
    // prints it in text anyway, and city and state are what the sorters use.
    '',
    maxiCodeText(doc.to.city, MAXICODE_CITY_LENGTH),
    maxiCodeText(doc.to.state, MAXICODE_STATE_LENGTH),
  ];
  const secondary = `${fields.join(GS)}${RS}${EOT}`;
  // A postal code of symbols alone (accepted where a country has no postal codes) leaves six spaces,
  // as ZPL's primary message has them: an empty one is no MaxiCode.
  const primaryPostalCode = postalCode.trim() || postalCode;
  const full = `[)>${RS}01${GS}96${primaryPostalCode}${GS}${countryCode}${GS}${serviceClass}${GS}${secondary}`;
  return { mode: usZip ? 2 : 3, postalCode, countryCode, serviceClass, secondary, full };
}

/**
 * What a PDF417 or DataMatrix carries: enough for a sorter, nothing personal, and short enough (about
 * 110 characters at most) for the symbol to stay inside its box.
 */
export function twoDimensionalPayload(doc: LabelDocument): string {
  return plainAscii(
    [
      doc.trackingNumber,
      doc.carrier.slug.slice(0, 12),
      doc.service.code.slice(0, 20),
      doc.to.zip.slice(0, 10),
      doc.to.country,
      `${doc.parcel.weight}G`,
      doc.labelId,
    ].join('|'),
  );
}
