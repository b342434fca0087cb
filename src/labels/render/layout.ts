import type { Address } from '../../addresses/schema.js';
import { formatTimestamp } from '../../core/time.js';
import {
  countryName,
  DOTS_PER_INCH,
  dimensionsText,
  type LabelDocument,
  type MaxiCodeMessage,
  maxiCodeMessage,
  PAGE_SIZES,
  printableText,
  routingCode,
  SAMPLE_MARK,
  type TwoDimensionalSymbology,
  twoDimensionalPayload,
  twoDimensionalSymbology,
  weightText,
} from './document.js';
import { fitText } from './text.js';

/**
 * The one layout every renderer shares, in printer dots at 203 dpi, origin top left. It is computed
 * here once; the PDF, PNG and ZPL renderers only map its boxes, texts and barcodes onto their medium,
 * so the three formats cannot drift apart.
 */

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

/**
 * PDF417 shape shared by bwip-js and ZPL's `^B7`, so both draw the same symbol. It is the layout's:
 * four columns at 2-dot modules (137 modules) is what fits the 296-dot 2D box.
 */
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
  const fitted = fitText(printableText(value), size, bold, width, options.minScale ?? 0.8);
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
