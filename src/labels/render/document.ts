import { createRequire } from 'node:module';
// The library without its 80 languages' names: only the code tables are needed here.
import countries from 'i18n-iso-countries/index.js';
import type { Address, Parcel } from '../../addresses/schema.js';
import { formatTimestamp } from '../../core/time.js';
import type { LABEL_FORMATS, LABEL_SIZES } from '../schema.js';

/**
 * What every label renderer draws from, and the one layout they share. The layout is computed here
 * once, in printer dots at 203 dpi; the PDF, PNG and ZPL renderers only map its boxes, texts and
 * barcodes onto their medium, so the three formats cannot drift apart.
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

/** The country's English name, as carriers print it under an address. */
export function countryName(code: string): string {
  regionNames ??= new Intl.DisplayNames(['en'], { type: 'region', fallback: 'code' });
  return regionNames.of(code) ?? code;
}

/** Plain printable ASCII, for barcode payloads and the MaxiCode message: accents dropped, anything else `?`. */
export function plainAscii(text: string): string {
  return text
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .replace(/[^\x20-\x7e]/g, '?');
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
    plainAscii(doc.to.city).toUpperCase().slice(0, 20),
    plainAscii(doc.to.state).toUpperCase().slice(0, 10),
  ];
  const secondary = `${fields.join(GS)}${RS}${EOT}`;
  const full = `[)>${RS}01${GS}96${postalCode.trim()}${GS}${countryCode}${GS}${serviceClass}${GS}${secondary}`;
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

// ---------------------------------------------------------------------------------------------
// Text measurement

// Helvetica's advance widths (per 1000 em) for ASCII 32..126. The PDF prints in Helvetica and the PNG
// in Arimo, which has Helvetica's metrics, so fitting text with these is exact in both; ZPL's font 0
// is condensed and only ever narrower.
const HELVETICA = [
  278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556,
  556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278,
  500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469,
  556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500,
  278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
];
const HELVETICA_BOLD = [
  278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556,
  556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611, 975, 722, 722, 722, 722, 667, 611, 778, 722, 278,
  556, 722, 611, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 333, 278, 333, 584,
  556, 333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556, 278, 889, 611, 611, 611, 611, 389, 556,
  333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584,
];
// Letters outside ASCII that have no ASCII base letter (Cyrillic, Greek, ...) are measured as a wide one.
const OTHER_WIDTH = 722;

export function textWidth(text: string, size: number, bold: boolean): number {
  const widths = bold ? HELVETICA_BOLD : HELVETICA;
  let units = 0;
  for (const char of text.normalize('NFD')) {
    const code = char.codePointAt(0) ?? 0;
    if (/\p{M}/u.test(char)) continue;
    units += (code >= 32 && code <= 126 ? widths[code - 32] : undefined) ?? OTHER_WIDTH;
  }
  return (units * size) / 1000;
}

/** Shrinks text down to `minScale` of its size to fit, then cuts it with an ellipsis. */
function fitText(
  text: string,
  size: number,
  bold: boolean,
  width: number,
  minScale: number,
): { text: string; size: number } {
  const natural = textWidth(text, size, bold);
  if (natural <= width) return { text, size };
  const smaller = Math.max(Math.ceil(size * minScale), Math.floor((size * width) / natural));
  if (textWidth(text, smaller, bold) <= width) return { text, size: smaller };
  const chars = [...text];
  while (chars.length > 1 && textWidth(`${chars.join('').trimEnd()}...`, smaller, bold) > width) chars.pop();
  return { text: `${chars.join('').trimEnd()}...`, size: smaller };
}

// ---------------------------------------------------------------------------------------------
// Layout, in dots, origin top left

export interface TextItem {
  kind: 'text';
  /** Left edge of the text, or of the span it is centred in. */
  x: number;
  baseline: number;
  /** The span it must stay within; the layout has already fitted the text to it. */
  width: number;
  size: number;
  bold: boolean;
  align: 'left' | 'center';
  /** White on a black box drawn before it. */
  inverse: boolean;
  text: string;
}

/** A filled box when `thickness` is null, else its border, drawn inside the box as ZPL's `^GB` does. */
export interface BoxItem {
  kind: 'box';
  x: number;
  y: number;
  width: number;
  height: number;
  thickness: number | null;
}

export type Symbology = 'code128' | TwoDimensionalSymbology;

/**
 * A barcode drawn in its box: Code 128 centred horizontally and as tall as the box, 2D symbols at the
 * top left. `module` is the narrowest bar or the cell size in dots.
 */
export interface BarcodeItem {
  kind: 'barcode';
  symbology: Symbology;
  x: number;
  y: number;
  width: number;
  height: number;
  module: number;
  data: string;
  /** Set for MaxiCode, whose primary message ZPL takes separately. */
  maxicode: MaxiCodeMessage | null;
}

export type LayoutItem = TextItem | BoxItem | BarcodeItem;

export interface Layout {
  width: number;
  height: number;
  items: LayoutItem[];
}

/** PDF417 shape shared by bwip-js and ZPL's `^B7`, so both draw the same symbol. */
export const PDF417 = { columns: 4, securityLevel: 3, rowModules: 3 } as const;

const CORE_WIDTH = 812;
const CORE_HEIGHT = 1218;
const MARGIN = 24;
const MAX_CODE128_MODULE = 3;

/**
 * Modules of a Code 128 symbol as printers encode it in automatic mode: runs of four or more digits
 * in code set C, two digits a symbol, the rest in code set B. bwip-js and ZPL may switch sets a symbol
 * sooner or later, so this sizes the bars; it does not predict them.
 */
export function code128Modules(text: string): number {
  let symbols = 0;
  let previous: 'B' | 'C' | null = null;
  for (const run of text.match(/\d{4,}|\d{1,3}|\D+/g) ?? []) {
    const set = /^\d{4,}$/.test(run) || (/^\d+$/.test(text) && text.length % 2 === 0) ? 'C' : 'B';
    symbols += set === 'C' ? Math.ceil(run.length / 2) : run.length;
    if (previous !== null && previous !== set) symbols += 1;
    previous = set;
  }
  // Start, check and stop symbols (the stop is 13 modules).
  return 11 * (symbols + 2) + 13;
}

export function layoutLabel(doc: LabelDocument): Layout {
  const geometry = PAGE_SIZES[doc.size];
  const items: LayoutItem[] = [];
  if (doc.size === 'letter') {
    const left = Math.round((geometry.widthDots - CORE_WIDTH) / 2);
    const top = Math.round(DOTS_PER_INCH / 2);
    items.push(...coreLabel(doc, left, top));
    items.push(...dashedFrame(left - 16, top - 16, CORE_WIDTH + 32, CORE_HEIGHT + 32));
    items.push(...letterInstructions(left - 16, CORE_WIDTH + 32, top + CORE_HEIGHT + 90));
  } else {
    items.push(...coreLabel(doc, 0, 0));
    if (doc.size === '4x8') items.push(...docTab(doc, CORE_HEIGHT, geometry.heightDots));
  }
  return { width: geometry.widthDots, height: geometry.heightDots, items };
}

interface TextOptions {
  bold?: boolean;
  align?: 'left' | 'center';
  inverse?: boolean;
  /** How far the text may shrink to fit before it is cut; addresses stay large, titles may not. */
  minScale?: number;
}

function text(
  value: string,
  x: number,
  baseline: number,
  width: number,
  size: number,
  options: TextOptions = {},
) {
  const bold = options.bold ?? false;
  const fitted = fitText(value, size, bold, width, options.minScale ?? 0.8);
  return {
    kind: 'text',
    x,
    baseline,
    width,
    size: fitted.size,
    bold,
    align: options.align ?? 'left',
    inverse: options.inverse ?? false,
    text: fitted.text,
  } satisfies TextItem;
}

function rule(x: number, y: number, width: number, thickness: number): BoxItem {
  return { kind: 'box', x, y, width, height: thickness, thickness: null };
}

function sampleBand(x: number, y: number, width: number): LayoutItem[] {
  return [
    { kind: 'box', x, y, width, height: 48, thickness: null },
    text(SAMPLE_MARK, x, y + 38, width, 36, { bold: true, align: 'center', inverse: true }),
  ];
}

function addressLines(address: Address): string[] {
  const cityLine = `${address.city}, ${address.state} ${address.zip}`;
  return [
    address.name,
    address.company,
    address.address1,
    address.address2,
    cityLine,
    countryName(address.country).toUpperCase(),
  ].filter((line): line is string => Boolean(line));
}

/** The 4x6 label itself, at (left, top); the other sizes add to it. */
function coreLabel(doc: LabelDocument, left: number, top: number): LayoutItem[] {
  const items: LayoutItem[] = [];
  const x = left + MARGIN;
  const right = left + CORE_WIDTH - MARGIN;
  const at = (y: number) => top + y;

  // Sender, and the carrier's block beside it.
  const fromWidth = 500;
  items.push(text('SHIP FROM:', x, at(44), fromWidth, 20, { bold: true }));
  addressLines(doc.from).forEach((line, index) => {
    items.push(text(line, x, at(74 + index * 28), fromWidth, 24));
  });
  const sideX = left + 540;
  const sideWidth = right - sideX;
  items.push(rule(sideX - 12, at(20), 3, 200));
  items.push(
    text(doc.carrier.name, sideX, at(84), sideWidth, 56, { bold: true, align: 'center', minScale: 0.5 }),
  );
  items.push(
    text(new Date(doc.createdAt).toISOString().slice(0, 10), sideX, at(126), sideWidth, 24, {
      align: 'center',
    }),
  );
  items.push(
    text(weightText(doc.parcel.weight), sideX, at(160), sideWidth, 24, { bold: true, align: 'center' }),
  );
  items.push(text(dimensionsText(doc.parcel), sideX, at(192), sideWidth, 22, { align: 'center' }));
  items.push(text('1 OF 1', sideX, at(222), sideWidth, 22, { align: 'center' }));
  items.push(rule(left, at(236), CORE_WIDTH, 4));

  // Recipient, large and upper case as carriers ask.
  items.push(text('SHIP TO:', x, at(276), 200, 22, { bold: true }));
  const toX = left + 80;
  const toWidth = right - toX;
  const to = doc.to;
  const toLines: Array<[string | undefined, number, boolean]> = [
    [to.name, 40, true],
    [to.company, 32, false],
    [to.address1, 34, false],
    [to.address2, 34, false],
    [`${to.city} ${to.state} ${to.zip}`, 42, true],
    [countryName(to.country), 34, true],
  ];
  let baseline = 318;
  for (const [line, size, bold] of toLines) {
    if (!line) continue;
    items.push(text(line.toUpperCase(), toX, at(baseline), toWidth, size, { bold }));
    baseline += size + 8;
  }
  items.push(rule(left, at(556), CORE_WIDTH, 4));

  // The 2D symbol and the routing code.
  const symbology = twoDimensionalSymbology(doc.carrier.slug);
  const maxicode = symbology === 'maxicode' ? maxiCodeMessage(doc) : null;
  items.push({
    kind: 'barcode',
    symbology,
    x,
    y: at(572),
    width: 296,
    height: 216,
    module: symbology === 'pdf417' ? 2 : 5,
    data: maxicode ? maxicode.full : twoDimensionalPayload(doc),
    maxicode,
  });
  const routeX = left + 352;
  const routeWidth = right - routeX;
  items.push(rule(routeX - 16, at(560), 3, 240));
  items.push(text('ROUTING', routeX, at(608), routeWidth, 22, { bold: true }));
  items.push(text(routingCode(to), routeX, at(690), routeWidth, 72, { bold: true }));
  items.push(text(`${to.city} ${to.state}`.toUpperCase(), routeX, at(748), routeWidth, 30));
  items.push(rule(left, at(800), CORE_WIDTH, 8));

  // Service and the merchant's reference.
  items.push(text(doc.service.name.toUpperCase(), x, at(854), right - x, 44, { bold: true }));
  items.push(text(`REF: ${doc.reference ?? '-'}`, x, at(890), right - x, 26));
  items.push(rule(left, at(904), CORE_WIDTH, 4));

  // The tracking number, as a Code 128 and in plain text.
  items.push(text(`TRACKING #: ${doc.trackingNumber}`, x, at(940), right - x, 26, { bold: true }));
  const barcodeWidth = right - x;
  items.push({
    kind: 'barcode',
    symbology: 'code128',
    x,
    y: at(956),
    width: barcodeWidth,
    height: 136,
    module: Math.max(
      1,
      Math.min(MAX_CODE128_MODULE, Math.floor(barcodeWidth / code128Modules(doc.trackingNumber))),
    ),
    data: doc.trackingNumber,
    maxicode: null,
  });
  items.push(text(doc.trackingNumber, x, at(1122), right - x, 30, { bold: true, align: 'center' }));
  items.push(text(`LABEL ${doc.labelId}`, x, at(1148), right - x, 18, { align: 'center' }));
  items.push(...sampleBand(x, at(1158), right - x));
  return items;
}

/** The extra two inches of a 4x8 label: a tear-off tab with the shipment's details. */
function docTab(doc: LabelDocument, top: number, bottom: number): LayoutItem[] {
  const x = MARGIN;
  const width = CORE_WIDTH - 2 * MARGIN;
  const items: LayoutItem[] = [...dashedRule(0, top + 12, CORE_WIDTH)];
  const lines = [
    `Label: ${doc.labelId}`,
    `Created: ${formatTimestamp(doc.createdAt)}`,
    `Carrier: ${doc.carrier.name} - ${doc.service.name}`,
    `Reference: ${doc.reference ?? '-'}`,
    `Parcel: ${weightText(doc.parcel.weight)}, ${dimensionsText(doc.parcel)}`,
    `From: ${doc.from.name}, ${doc.from.city} ${doc.from.country}`,
    `To: ${doc.to.name}, ${doc.to.city} ${doc.to.country}`,
  ];
  items.push(text('SHIPMENT DETAILS', x, top + 60, width, 26, { bold: true }));
  lines.forEach((line, index) => {
    items.push(text(line, x, top + 96 + index * 34, width, 24));
  });
  items.push(...sampleBand(x, bottom - 66, width));
  return items;
}

function dashedRule(x: number, y: number, width: number): BoxItem[] {
  const boxes: BoxItem[] = [];
  for (let dashX = x; dashX < x + width; dashX += 24) {
    boxes.push(rule(dashX, y, Math.min(12, x + width - dashX), 2));
  }
  return boxes;
}

function dashedFrame(x: number, y: number, width: number, height: number): BoxItem[] {
  const boxes: BoxItem[] = [...dashedRule(x, y, width), ...dashedRule(x, y + height - 2, width)];
  for (let dashY = y; dashY < y + height; dashY += 24) {
    const length = Math.min(12, y + height - dashY);
    boxes.push({ kind: 'box', x, y: dashY, width: 2, height: length, thickness: null });
    boxes.push({ kind: 'box', x: x + width - 2, y: dashY, width: 2, height: length, thickness: null });
  }
  return boxes;
}

/** What a merchant reads under a label printed on plain paper, in line with the dashed frame. */
function letterInstructions(x: number, width: number, top: number): LayoutItem[] {
  return [
    text(SAMPLE_MARK, x, top, width, 56, { bold: true, align: 'center' }),
    text('1. Print this page at 100% scale, without fitting it to the page.', x, top + 64, width, 26),
    text('2. Cut along the dashed line; attach the label so that it lies flat.', x, top + 102, width, 26),
    text('3. This label comes from a test key: carriers will not accept it.', x, top + 140, width, 26),
  ];
}

// ---------------------------------------------------------------------------------------------
// Barcodes as shapes, for the PDF and PNG renderers (ZPL printers draw their own)

/** What is used of bwip-js: encoding a symbol without drawing it. */
interface Bwip {
  raw(symbology: string, text: string, options: string): unknown[];
}
let bwip: Bwip | undefined;

/**
 * bwip-js is loaded on the first barcode, by `require`: its CommonJS build exports the raw-data
 * function as `raw` (its ES build names the "raw" symbology so), and the bundled server has no
 * dynamic `import()` to offer.
 */
async function loadBwip(): Promise<Bwip> {
  bwip ??= createRequire(import.meta.url)('bwip-js') as Bwip;
  return bwip;
}

/**
 * A barcode's dark parts in page dots. None overlap, and a ring is a disc with a hole, so every
 * renderer can fill them all at once with the even-odd rule (or paint them one by one).
 */
export type BarcodeShape =
  | { kind: 'rect'; x: number; y: number; width: number; height: number }
  | { kind: 'polygon'; points: Array<[number, number]> }
  | { kind: 'ring'; cx: number; cy: number; outer: number; inner: number };

/** Bars and cells come out on whole dots, so that a 203-dpi raster of them is crisp. */
export async function barcodeShapes(item: BarcodeItem): Promise<BarcodeShape[]> {
  const bwipjs = await loadBwip();
  switch (item.symbology) {
    case 'code128': {
      const [symbol] = bwipjs.raw('code128', item.data, '');
      const widths = (symbol as { sbs?: number[] } | undefined)?.sbs ?? [];
      const total = widths.reduce((sum, width) => sum + width, 0) * item.module;
      let x = item.x + Math.max(0, Math.floor((item.width - total) / 2));
      const shapes: BarcodeShape[] = [];
      widths.forEach((width, index) => {
        if (index % 2 === 0)
          shapes.push({ kind: 'rect', x, y: item.y, width: width * item.module, height: item.height });
        x += width * item.module;
      });
      return shapes;
    }
    case 'pdf417':
    case 'datamatrix': {
      const options =
        item.symbology === 'pdf417'
          ? `columns=${PDF417.columns} eclevel=${PDF417.securityLevel} rowmult=${PDF417.rowModules}`
          : '';
      const [symbol] = bwipjs.raw(item.symbology, item.data, options);
      const {
        pixs = [],
        pixx = 0,
        pixy = 0,
      } = (symbol ?? {}) as { pixs?: number[]; pixx?: number; pixy?: number };
      const rows = pixx > 0 ? pixs.length / pixx : 0;
      // PDF417 rows are several modules tall; bwip-js reports the symbol's full height in pixy.
      const cellHeight = rows > 0 ? (pixy / rows) * item.module : 0;
      const shapes: BarcodeShape[] = [];
      for (let row = 0; row < rows; row++) {
        // One rectangle per run of dark cells: fewer shapes, and no seams between neighbours.
        let runStart = -1;
        for (let column = 0; column <= pixx; column++) {
          const dark = column < pixx && pixs[row * pixx + column] === 1;
          if (dark && runStart < 0) runStart = column;
          if (!dark && runStart >= 0) {
            shapes.push({
              kind: 'rect',
              x: item.x + runStart * item.module,
              y: item.y + row * cellHeight,
              width: (column - runStart) * item.module,
              height: cellHeight,
            });
            runStart = -1;
          }
        }
      }
      return shapes;
    }
    case 'maxicode':
      return maxiCodeShapes(bwipjs, item);
  }
}

// MaxiCode geometry (ISO/IEC 16023) in module widths: 33 rows of 30 hexagons with vertical sides,
// odd rows shifted half a module right, rows √3/2 apart, and a bullseye of three rings in the middle.
const HEX_HEIGHT = 2 / Math.sqrt(3);
const ROW_PITCH = Math.sqrt(3) / 2;
const HEX_INK = 0.88;
const MAXICODE_WIDTH = 30.5;
const MAXICODE_HEIGHT = 32 * ROW_PITCH + HEX_HEIGHT;
const BULLSEYE: ReadonlyArray<readonly [number, number]> = [
  [1, 0.5],
  [2.5, 1.75],
  [3.75, 3],
];

/**
 * bwip-js encodes the symbol; its modules are placed here on the standard grid. (bwip-js's own
 * drawing squeezes the rows closer, and a decoder that samples the standard grid misreads it.)
 */
function maxiCodeShapes(bwipjs: Bwip, item: BarcodeItem): BarcodeShape[] {
  const [symbol] = bwipjs.raw('maxicode', item.data, `mode=${item.maxicode?.mode ?? 4}`);
  const dark = (symbol as { pixs?: number[] } | undefined)?.pixs ?? [];
  const scale = Math.min(item.width / MAXICODE_WIDTH, item.height / MAXICODE_HEIGHT);
  const round = (value: number) => Math.round(value * 100) / 100;
  const at = (x: number, y: number): [number, number] => [
    round(item.x + x * scale),
    round(item.y + y * scale),
  ];
  const shapes: BarcodeShape[] = dark.map((index) => {
    const row = Math.floor(index / 30);
    const cx = (index % 30) + 0.5 + (row % 2) * 0.5;
    const cy = row * ROW_PITCH + HEX_HEIGHT / 2;
    // Printed hexagons are a little smaller than the grid, leaving the gaps a MaxiCode shows.
    const [w2, h2, h4] = [HEX_INK / 2, (HEX_INK * HEX_HEIGHT) / 2, (HEX_INK * HEX_HEIGHT) / 4];
    return {
      kind: 'polygon',
      points: [
        at(cx, cy - h2),
        at(cx + w2, cy - h4),
        at(cx + w2, cy + h4),
        at(cx, cy + h2),
        at(cx - w2, cy + h4),
        at(cx - w2, cy - h4),
      ],
    };
  });
  const [cx, cy] = at(MAXICODE_WIDTH / 2, MAXICODE_HEIGHT / 2);
  for (const [outer, inner] of BULLSEYE) {
    shapes.push({ kind: 'ring', cx, cy, outer: round(outer * scale), inner: round(inner * scale) });
  }
  return shapes;
}
