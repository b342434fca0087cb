import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { inflateSync } from 'node:zlib';
import { decodePDFRawStream, PDFArray, PDFDict, PDFDocument, PDFName, PDFRawStream } from 'pdf-lib';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import type { Browser, Page } from 'playwright-core';
import pngjs from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareZXingModule, type ReadResult, readBarcodes } from 'zxing-wasm/reader';
import type { Address } from '../src/addresses/schema.js';
import { barcodeShapes } from '../src/labels/render/barcodes.js';
import {
  type LabelDocument,
  type LabelSize,
  MAXICODE_CITY_LENGTH,
  maxiCodeMessage,
  PAGE_SIZES,
  routingCode,
  SAMPLE_MARK,
  weightText,
} from '../src/labels/render/document.js';
import { renderLabel } from '../src/labels/render/index.js';
import { type BarcodeItem, layoutLabel } from '../src/labels/render/layout.js';
import { textWidth } from '../src/labels/render/text.js';
import { renderZpl } from '../src/labels/render/zpl.js';
import { trackingNumberFor } from '../src/labels/tracking-number.js';
import { chromiumMissing, launchChromium } from './browser.js';

const require = createRequire(import.meta.url);

const FROM: Address = {
  name: 'Ada Lovelace',
  company: 'Analytical Engines Ltd',
  address1: '417 Montgomery St',
  address2: 'Floor 5',
  city: 'San Francisco',
  state: 'CA',
  zip: '94104',
  country: 'US',
};
const TO_US: Address = {
  name: 'Zoë Müller',
  address1: '1600 Amphitheatre Pkwy',
  city: 'Mountain View',
  state: 'CA',
  zip: '94043-1351',
  country: 'US',
};
const TO_GB: Address = {
  name: 'Grace Hopper',
  address1: '10 Downing Street',
  city: 'London',
  state: 'LND',
  zip: 'SW1A 2AA',
  country: 'GB',
};

const CARRIERS = {
  ups: { name: 'UPS', service: { code: 'ground', name: 'Ground' } },
  usps: { name: 'USPS', service: { code: 'priority', name: 'Priority Mail' } },
  fedex: { name: 'FedEx', service: { code: 'fedex_2day', name: 'FedEx 2Day' } },
  dhl_express: { name: 'DHL Express', service: { code: 'express_worldwide', name: 'Express Worldwide' } },
} as const;
type Carrier = keyof typeof CARRIERS;

const SIZES: LabelSize[] = ['4x6', '4x8', 'letter'];
/** Each size drawn for a different carrier, so every carrier's 2D symbol is seen too. */
const CASES: Array<[LabelSize, Carrier]> = [
  ['4x6', 'ups'],
  ['4x8', 'fedex'],
  ['letter', 'usps'],
  ['4x6', 'dhl_express'],
];
const SYMBOLOGY: Record<Carrier, string> = {
  ups: 'MaxiCode',
  fedex: 'PDF417',
  usps: 'DataMatrix',
  dhl_express: 'PDF417',
};

function labelDoc(
  carrier: Carrier,
  size: LabelSize,
  format: LabelDocument['format'],
  changes: Partial<LabelDocument> = {},
): LabelDocument {
  const labelId = changes.labelId ?? 'lbl_01JD3S5Z7QK2N8W4X6Y9A0B1C2';
  return {
    labelId,
    trackingNumber: trackingNumberFor(carrier, labelId),
    carrier: { slug: carrier, name: CARRIERS[carrier].name },
    service: CARRIERS[carrier].service,
    from: FROM,
    to: TO_US,
    parcel: { weight: 1200, length: 30, width: 20, height: 10 },
    reference: 'order-1042',
    createdAt: Date.UTC(2026, 10, 22, 8, 23, 14),
    size,
    format,
    ...changes,
  };
}

describe('label layout', () => {
  it('routes on the 5-digit ZIP in the US and on postal code and country elsewhere', () => {
    expect(routingCode(TO_US)).toBe('ZIP 94043');
    expect(routingCode(TO_GB)).toBe('SW1A 2AA GB');
  });

  it('gives the weight in kilograms and pounds', () => {
    expect(weightText(1200)).toBe('1.20 KG / 2.65 LB');
  });

  it.each(SIZES)(
    'keeps every text of a %s label inside its span and the page, even for long addresses',
    (size) => {
      const long = 'Wolfeschlegelsteinhausenbergerdorff Hubert Blaine Zeus Wolfe Jr '.repeat(2).slice(0, 100);
      const doc = labelDoc('ups', size, 'pdf', {
        from: { ...FROM, name: long, address1: long },
        to: { ...TO_GB, name: long, company: long, address1: long, address2: long, city: long.slice(0, 60) },
        reference: long,
      });
      const layout = layoutLabel(doc);
      expect([layout.width, layout.height]).toEqual([
        PAGE_SIZES[size].widthDots,
        PAGE_SIZES[size].heightDots,
      ]);
      for (const item of layout.items) {
        if (item.kind === 'text') {
          expect(textWidth(item.text, item.size, item.bold), item.text).toBeLessThanOrEqual(item.width);
          expect(item.x + item.width).toBeLessThanOrEqual(layout.width);
          expect(item.baseline).toBeLessThanOrEqual(layout.height);
        } else {
          expect(item.x + item.width, item.kind).toBeLessThanOrEqual(layout.width);
          expect(item.y + item.height, item.kind).toBeLessThanOrEqual(layout.height);
        }
      }
    },
  );

  it("picks each carrier's 2D symbol", () => {
    const symbols = Object.keys(CARRIERS).map(
      (carrier) =>
        layoutLabel(labelDoc(carrier as Carrier, '4x6', 'pdf')).items.find(
          (item): item is BarcodeItem => item.kind === 'barcode' && item.symbology !== 'code128',
        )?.symbology,
    );
    expect(symbols).toEqual(['maxicode', 'datamatrix', 'pdf417', 'pdf417']);
  });
});

async function pdfText(bytes: Uint8Array): Promise<string> {
  const pdf = await getDocument({
    data: new Uint8Array(bytes),
    standardFontDataUrl: require
      .resolve('pdfjs-dist/package.json')
      .replace(/package\.json$/, 'standard_fonts/'),
    isEvalSupported: false,
  }).promise;
  const page = await pdf.getPage(1);
  const content = await page.getTextContent();
  const text = content.items.map((item) => ('str' in item ? item.str : '')).join('\n');
  await pdf.destroy();
  return text;
}

describe('PDF labels', () => {
  it.each(CASES)('are %s pages (%s)', async (size, carrier) => {
    const { bytes, contentType, extension } = await renderLabel(labelDoc(carrier, size, 'pdf'));
    expect([contentType, extension]).toEqual(['application/pdf', 'pdf']);
    const pdf = await PDFDocument.load(bytes);
    expect(pdf.getPageCount()).toBe(1);
    const { width, height } = pdf.getPage(0).getSize();
    expect([width, height]).toEqual([PAGE_SIZES[size].widthPt, PAGE_SIZES[size].heightPt]);
    expect(pdf.getCreationDate()?.getTime()).toBe(Date.UTC(2026, 10, 22, 8, 23, 14));
  });

  it.each(CASES)('carry the label text, %s (%s)', async (size, carrier) => {
    const doc = labelDoc(carrier, size, 'pdf');
    const text = await pdfText((await renderLabel(doc)).bytes);
    for (const expected of [
      doc.trackingNumber,
      `TRACKING #: ${doc.trackingNumber}`,
      FROM.name,
      TO_US.name.toUpperCase(),
      doc.service.name.toUpperCase(),
      'REF: order-1042',
      'ZIP 94043',
      '1.20 KG / 2.65 LB',
      CARRIERS[carrier].name,
      SAMPLE_MARK,
    ]) {
      expect(text).toContain(expected);
    }
  });

  it('are the same bytes for the same label, and differ for another label', async () => {
    const doc = labelDoc('ups', '4x6', 'pdf');
    const first = (await renderLabel(doc)).bytes;
    const again = (await renderLabel(structuredClone(doc))).bytes;
    expect(Buffer.from(again).equals(Buffer.from(first))).toBe(true);
    const other = (
      await renderLabel(labelDoc('ups', '4x6', 'pdf', { labelId: 'lbl_01JD3S5Z7QK2N8W4X6Y9A0B1C3' }))
    ).bytes;
    expect(Buffer.from(other).equals(Buffer.from(first))).toBe(false);
  });

  it('draw each barcode as a compressed form of its modules that the page paints', async () => {
    const doc = labelDoc('usps', '4x6', 'pdf');
    const pdf = await PDFDocument.load((await renderLabel(doc)).bytes);
    const page = pdf.getPage(0);
    const contents = page.node.Contents();
    const streams =
      contents instanceof PDFArray ? contents.asArray().map((ref) => pdf.context.lookup(ref)) : [contents];
    const operators = streams
      .map((stream) => Buffer.from(decodePDFRawStream(stream as PDFRawStream).decode()).toString('latin1'))
      .join('\n');
    const xObjects = page.node.Resources()?.lookup(PDFName.of('XObject'), PDFDict);
    const names = (xObjects?.keys() ?? []).filter((key) => key.asString().startsWith('/Barcode'));

    const rectsDrawn = names.map((name) => {
      expect(operators).toContain(`${name.asString()} Do`);
      const form = xObjects?.lookup(name);
      expect(form).toBeInstanceOf(PDFRawStream);
      const stream = form as PDFRawStream;
      expect(stream.dict.lookup(PDFName.of('Filter'))).toBe(PDFName.of('FlateDecode'));
      expect(stream.dict.lookup(PDFName.of('Subtype'))).toBe(PDFName.of('Form'));
      const path = inflateSync(stream.getContents()).toString('latin1').split('\n');
      expect([path[0], path.at(-1)]).toEqual(['0 g', 'f*']);
      return path.filter((line) => line.endsWith(' re')).length;
    });

    const barcodes = layoutLabel(doc).items.filter((item) => item.kind === 'barcode');
    const rectsLaidOut = [];
    for (const item of barcodes)
      rectsLaidOut.push((await barcodeShapes(item)).filter((shape) => shape.kind === 'rect').length);
    expect(names).toHaveLength(barcodes.length);
    expect(rectsDrawn.sort()).toEqual(rectsLaidOut.sort());
    expect(Math.min(...rectsDrawn)).toBeGreaterThan(20);
  });

  it("keep the carrier's name in their title as it is, whatever its characters", async () => {
    for (const name of ['Post (Express) \\ Co', 'Pöst Ωmega 東京 😀']) {
      const doc = labelDoc('usps', '4x6', 'pdf', { carrier: { slug: 'usps', name } });
      const pdf = await PDFDocument.load((await renderLabel(doc)).bytes, { updateMetadata: false });
      expect(pdf.getTitle()).toBe(`${name} label ${doc.trackingNumber}`);
      expect([pdf.getSubject(), pdf.getCreator(), pdf.getProducer()]).toEqual([
        SAMPLE_MARK,
        'Shipping Sandbox',
        'Shipping Sandbox',
      ]);
      expect(pdf.getModificationDate()?.getTime()).toBe(doc.createdAt);
    }
  });

  it('have a cross-reference table that points at each of their objects', async () => {
    for (const [size, carrier] of CASES) {
      const file = Buffer.from((await renderLabel(labelDoc(carrier, size, 'pdf'))).bytes).toString('latin1');
      const xref = Number(/startxref\n(\d+)\n%%EOF\n$/.exec(file)?.[1]);
      const table = /^xref\n0 (\d+)\n((?:\d{10} \d{5} [fn] \n)+)trailer\n/.exec(file.slice(xref));
      expect(table, `${size} ${carrier}`).not.toBeNull();
      const entries = table?.[2]?.match(/.{20}/gs) ?? [];
      expect(entries).toHaveLength(Number(table?.[1]));
      entries.slice(1).forEach((entry, index) => {
        const offset = Number(entry.slice(0, 10));
        expect(file.slice(offset, offset + 12), `object ${index + 1}`).toMatch(
          new RegExp(`^${index + 1} 0 obj\n`),
        );
      });
    }
  });

  it('print characters outside Helvetica as ? rather than fail', async () => {
    const doc = labelDoc('dhl_express', '4x6', 'pdf', { to: { ...TO_GB, name: 'Łukasz Иванов' } });
    expect(await pdfText((await renderLabel(doc)).bytes)).toContain('?UKASZ ??????');
  });
});

let zxingReady: Promise<unknown> | undefined;

/** The barcodes a real reader (ZXing) finds in a PNG, in the whole image or in one region of it. */
async function readPng(
  bytes: Uint8Array,
  formats: string[],
  region?: { x: number; y: number; width: number; height: number },
): Promise<ReadResult[]> {
  zxingReady ??= prepareZXingModule({
    overrides: {
      wasmBinary: readFileSync(require.resolve('zxing-wasm/reader/zxing_reader.wasm')).buffer as ArrayBuffer,
    },
    fireImmediately: true,
  });
  await zxingReady;
  const png = pngjs.PNG.sync.read(Buffer.from(bytes));
  const { x, y, width, height } = region ?? { x: 0, y: 0, width: png.width, height: png.height };
  const data = new Uint8ClampedArray(width * height * 4);
  for (let row = 0; row < height; row++) {
    const start = ((y + row) * png.width + x) * 4;
    data.set(png.data.subarray(start, start + width * 4), row * width * 4);
  }
  const image = { data, width, height, colorSpace: 'srgb' } as ImageData;
  // MaxiCode is only read on its own (ZXing's "pure" mode), which is what the region is for.
  return readBarcodes(image, {
    formats: formats as never,
    tryHarder: true,
    isPure: formats.includes('MaxiCode'),
    textMode: 'Plain',
  });
}

/** The region of a layout's 2D symbol, with a quiet margin and none of the rules around it. */
function symbolRegion(doc: LabelDocument) {
  const item = layoutLabel(doc).items.find(
    (candidate): candidate is BarcodeItem =>
      candidate.kind === 'barcode' && candidate.symbology !== 'code128',
  );
  if (!item) throw new Error('no 2D symbol');
  return { x: item.x - 8, y: item.y - 6, width: item.width - 30, height: item.height + 12 };
}

describe('PNG labels', () => {
  it.each(CASES)('are 203-dpi images of a %s page (%s)', async (size, carrier) => {
    const { bytes, contentType, extension } = await renderLabel(labelDoc(carrier, size, 'png'));
    expect([contentType, extension]).toEqual(['image/png', 'png']);
    const png = pngjs.PNG.sync.read(Buffer.from(bytes));
    expect([png.width, png.height]).toEqual([PAGE_SIZES[size].widthDots, PAGE_SIZES[size].heightDots]);
    const expected = { '4x6': [812, 1218], '4x8': [812, 1624], letter: [1726, 2233] }[size];
    expect([png.width, png.height]).toEqual(expected);
  });

  it.each(CASES)(
    'have a Code 128 of the tracking number and a 2D symbol that a reader decodes, %s (%s)',
    async (size, carrier) => {
      const doc = labelDoc(carrier, size, 'png');
      const { bytes } = await renderLabel(doc);
      const linear = await readPng(bytes, ['Code128']);
      expect(linear.map((result) => result.text)).toEqual([doc.trackingNumber]);
      const symbol = SYMBOLOGY[carrier];
      const matrix = await readPng(bytes, [symbol], symbolRegion(doc));
      expect(matrix.map((result) => result.format)).toEqual([symbol]);
      expect(matrix[0]?.text).toContain(doc.trackingNumber);
    },
  );

  it('encode a UPS structured carrier message in the MaxiCode, mode 3 abroad', async () => {
    const doc = labelDoc('ups', '4x6', 'png', { to: TO_GB });
    const [maxicode] = await readPng((await renderLabel(doc)).bytes, ['MaxiCode'], symbolRegion(doc));
    // Header, then the primary message: postal code (6 characters), ISO country 826, class of service.
    expect(maxicode?.text.startsWith('[)>\x1e01\x1d96SW1A2A\x1d826\x1d003\x1d1Z')).toBe(true);
  });

  // The API takes any characters in a city (100 of them) and a state (50); the symbol holds a few
  // dozen after its fixed fields. What a reader finds is what fits: capitals, digits and spaces.
  it('keep the MaxiCode readable for a long city and state full of symbols, cut as UPS does', async () => {
    const symbols = '#$%&*@!~^{}[]<>|\\';
    const doc = labelDoc('ups', '4x6', 'png', {
      to: {
        ...TO_US,
        name: symbols.repeat(6).slice(0, 100),
        address1: symbols.repeat(6).slice(0, 100),
        city: `San ${symbols}Francisco ${'Wolfeschlegelstein '.repeat(5)}`.slice(0, 100),
        state: `CA${symbols.repeat(3)}`,
        zip: '94104',
      },
      parcel: { weight: 70_000, length: 300, width: 300, height: 300 },
    });
    const [maxicode] = await readPng((await renderLabel(doc)).bytes, ['MaxiCode'], symbolRegion(doc));
    const fields = maxicode?.text.split('\x1d') ?? [];
    expect(fields.slice(-2)).toEqual(['SAN FRANCISCO WOLF', `CA\x1e\x04`]);
    expect(fields).toContain(doc.trackingNumber);
  });

  it('keep a MaxiCode where the postal code is symbols alone, as a country without postal codes allows', async () => {
    const doc = labelDoc('ups', '4x6', 'png', {
      to: { ...TO_GB, country: 'HK', city: 'Hong Kong', state: 'HK', zip: '#-#' },
    });
    const [maxicode] = await readPng((await renderLabel(doc)).bytes, ['MaxiCode'], symbolRegion(doc));
    // Mode 3: six spaces for the postal code, then Hong Kong's ISO number.
    expect(maxicode?.text.startsWith('[)>\x1e01\x1d96      \x1d344\x1d003\x1d1Z')).toBe(true);
  });

  it('leave room in the MaxiCode for the longest city and state it carries, in mode 2 and 3', async () => {
    // The widest fixed fields: a shipper number mixing letters and digits, the heaviest parcel.
    const bwip = require('bwip-js') as { raw(symbology: string, text: string, options: string): unknown };
    for (const [to, mode] of [
      [TO_US, 2],
      [TO_GB, 3],
    ] as const) {
      for (const shipper of ['A1B2C3', '1A2B3C', 'ZZZZZZ', '999999']) {
        const doc = labelDoc('ups', '4x6', 'png', {
          trackingNumber: `1Z${shipper}0387654321`,
          to: {
            ...to,
            city: 'A1 B'.repeat(40).slice(0, MAXICODE_CITY_LENGTH),
            state: '9Z9Z9',
          },
          parcel: { weight: 70_000, length: 300, width: 300, height: 300 },
          createdAt: Date.UTC(2028, 11, 31),
        });
        const message = maxiCodeMessage(doc);
        expect(message.mode).toBe(mode);
        expect(() => bwip.raw('maxicode', message.full, `mode=${mode}`)).not.toThrow();
      }
    }
  });

  it('are the same bytes for the same label', async () => {
    const doc = labelDoc('fedex', '4x8', 'png');
    const first = (await renderLabel(doc)).bytes;
    const again = (await renderLabel(structuredClone(doc))).bytes;
    expect(Buffer.from(again).equals(Buffer.from(first))).toBe(true);
  });
});

describe('PDF labels drawn by pdf.js in Chromium', { timeout: 60_000 }, () => {
  // pdf.js and its page are answered inside the browser, under a name that resolves to loopback.
  const ORIGIN = 'http://labels.localhost';
  let browser: Browser | undefined;
  let page: Page;

  beforeAll(async () => {
    const missing = chromiumMissing();
    if (missing) throw new Error(missing);
    browser = await launchChromium();
    page = await browser.newPage();
    const pdfjs = require.resolve('pdfjs-dist/package.json').replace(/package\.json$/, 'build/');
    const files: Record<string, [string, string]> = {
      '/': ['text/html', '<!doctype html><canvas></canvas>'],
      '/pdf.mjs': ['text/javascript', readFileSync(`${pdfjs}pdf.min.mjs`, 'utf8')],
      '/pdf.worker.mjs': ['text/javascript', readFileSync(`${pdfjs}pdf.worker.min.mjs`, 'utf8')],
    };
    await page.route(`${ORIGIN}/**`, (route) => {
      const file = files[new URL(route.request().url()).pathname];
      return file ? route.fulfill({ contentType: file[0], body: file[1] }) : route.abort();
    });
    await page.goto(`${ORIGIN}/`);
    await page.addScriptTag({ url: `${ORIGIN}/pdf.mjs`, type: 'module' });
    await page.waitForFunction(() => 'pdfjsLib' in globalThis);
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
  });

  /** The PDF's page drawn at 203 dpi, one pixel a dot as the PNG label is, as a PNG. */
  async function rasterise(bytes: Uint8Array): Promise<Uint8Array> {
    const url = await page.evaluate(
      async ([base64, origin]) => {
        const lib = (globalThis as any).pdfjsLib;
        lib.GlobalWorkerOptions.workerSrc = `${origin}/pdf.worker.mjs`;
        const data = Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
        const pdf = await lib.getDocument({ data }).promise;
        const pdfPage = await pdf.getPage(1);
        const viewport = pdfPage.getViewport({ scale: 203 / 72 });
        const canvas = document.querySelector('canvas') as HTMLCanvasElement;
        canvas.width = Math.round(viewport.width);
        canvas.height = Math.round(viewport.height);
        const context = canvas.getContext('2d') as CanvasRenderingContext2D;
        context.fillStyle = 'white';
        context.fillRect(0, 0, canvas.width, canvas.height);
        await pdfPage.render({ canvasContext: context, viewport }).promise;
        await pdf.destroy();
        return canvas.toDataURL('image/png');
      },
      [Buffer.from(bytes).toString('base64'), ORIGIN] as const,
    );
    return Buffer.from(url.slice(url.indexOf(',') + 1), 'base64');
  }

  it.each(CASES)('have a Code 128 and a 2D symbol that a reader decodes, %s (%s)', async (size, carrier) => {
    const doc = labelDoc(carrier, size, 'pdf');
    const image = await rasterise((await renderLabel(doc)).bytes);
    const png = pngjs.PNG.sync.read(Buffer.from(image));
    expect([png.width, png.height]).toEqual([PAGE_SIZES[size].widthDots, PAGE_SIZES[size].heightDots]);
    const linear = await readPng(image, ['Code128']);
    expect(linear.map((result) => result.text)).toEqual([doc.trackingNumber]);
    const matrix = await readPng(image, [SYMBOLOGY[carrier]], symbolRegion(doc));
    expect(matrix.map((result) => result.format)).toEqual([SYMBOLOGY[carrier]]);
    expect(matrix[0]?.text).toContain(doc.trackingNumber);
  });
});

/** `^FD` field data with the `^FH_` hex escapes undone. */
function fieldTexts(zpl: string): string[] {
  return [...zpl.matchAll(/\^FD(.*?)\^FS/gs)].map(([, data = '']) =>
    Buffer.from(
      data.replace(/_([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
      'latin1',
    ).toString('utf8'),
  );
}

describe('ZPL labels', () => {
  it.each(SIZES)('are one %s label for a 203-dpi printer', async (size) => {
    const doc = labelDoc('ups', size, 'zpl');
    const { bytes, contentType, extension } = await renderLabel(doc);
    expect([contentType, extension]).toEqual(['application/zpl', 'zpl']);
    const zpl = new TextDecoder().decode(bytes);
    expect(zpl).toBe(renderZpl(doc));
    expect(zpl.startsWith('^XA')).toBe(true);
    expect(zpl.trimEnd().endsWith('^XZ')).toBe(true);
    expect(zpl.match(/\^XA/g)).toHaveLength(1);
    expect(zpl.match(/\^XZ/g)).toHaveLength(1);
    expect(Number(/\^PW(\d+)/.exec(zpl)?.[1])).toBe(PAGE_SIZES[size].widthDots);
    expect(Number(/\^LL(\d+)/.exec(zpl)?.[1])).toBe(PAGE_SIZES[size].heightDots);
    expect(zpl).toMatch(new RegExp(`\\^BC[^\\^]*\\^FH_\\^FD${doc.trackingNumber}\\^FS`));
    expect(zpl).toContain('^BD2');
    const texts = fieldTexts(zpl);
    expect(texts).toContain(SAMPLE_MARK);
    expect(texts).toContain(TO_US.name.toUpperCase());
  });

  it('escape ZPL control characters and UTF-8 in field data', () => {
    const doc = labelDoc('fedex', '4x6', 'zpl', { to: { ...TO_US, name: 'A^B~C_D Ünal' }, reference: '^XZ' });
    const zpl = renderZpl(doc);
    expect(zpl.match(/\^XZ/g)).toHaveLength(1);
    for (const [, data = ''] of zpl.matchAll(/\^FD(.*?)\^FS/gs)) expect(data).toMatch(/^[\x20-\x7e]*$/);
    const texts = fieldTexts(zpl);
    expect(texts).toContain('A^B~C_D ÜNAL');
    expect(texts).toContain('REF: ^XZ');
  });

  describe('rendered by a ZPL viewer (zpl-renderer-js, Zebrash in WebAssembly)', () => {
    let render: (zpl: string, size: LabelSize) => Promise<Uint8Array>;

    beforeAll(async () => {
      // Through require, so that Node loads it as it is and vitest does not look for its missing source map.
      const { ready } = require('zpl-renderer-js') as typeof import('zpl-renderer-js');
      const { api } = await ready;
      render = async (zpl, size) => {
        const { widthIn, heightIn } = PAGE_SIZES[size];
        try {
          return Buffer.from(await api.zplToBase64Async(zpl, widthIn * 25.4, heightIn * 25.4, 8), 'base64');
        } catch (error) {
          // Its errors carry the whole inlined module as a stack; the message is what matters.
          throw new Error(String(error instanceof Error ? error.message : error).slice(0, 300));
        }
      };
    }, 60_000);

    it.each([...CASES, ['4x6', 'ups', TO_GB] as const])(
      'draws a %s %s label whose barcodes a reader decodes',
      async (size, carrier, to = TO_US) => {
        const doc = labelDoc(carrier, size, 'zpl', { to });
        const image = await render(renderZpl(doc), size);
        const png = pngjs.PNG.sync.read(Buffer.from(image));
        // The viewer rounds millimetres at 8 dots a millimetre, so it may add a dot.
        expect(Math.abs(png.width - PAGE_SIZES[size].widthDots)).toBeLessThanOrEqual(2);
        expect(Math.abs(png.height - PAGE_SIZES[size].heightDots)).toBeLessThanOrEqual(3);
        const linear = await readPng(image, ['Code128']);
        expect(linear.map((result) => result.text)).toEqual([doc.trackingNumber]);
        const matrix = await readPng(image, [SYMBOLOGY[carrier]], symbolRegion(doc));
        expect(matrix[0]?.text).toContain(doc.trackingNumber);
      },
      60_000,
    );
  });
});

describe('label files, byte for byte', () => {
  /** Every carrier, size and format, and text that each renderer has to replace, cut or shrink. */
  const PINNED: Array<[string, LabelDocument]> = [
    ...CASES.flatMap(([size, carrier]) =>
      (['pdf', 'png', 'zpl'] as const).map((format): [string, LabelDocument] => [
        `${carrier} ${size} ${format}`,
        labelDoc(carrier, size, format),
      ]),
    ),
    ...(['pdf', 'png'] as const).map((format): [string, LabelDocument] => [
      `abroad, with odd text, ${format}`,
      labelDoc('ups', '4x8', format, {
        to: {
          ...TO_GB,
          name: 'Łukasz Иванов 東京 😀',
          company: 'Ünal & Søn – “Straße” ^~_\\',
          address2: 'x',
        },
        from: { ...FROM, address1: `${'Very long street name '.repeat(6)}1`, city: 'Zürich' },
        reference: null,
      }),
    ]),
  ];

  // SHA-256 of each file: a faster renderer must draw the very same bytes. ZPL files are as the
  // renderer drew them before it was made faster (commit 1f0c1ce). PNG files are compressed at a
  // faster level since, and their images are pinned below as they were then. PDF files are as
  // pdf-file.ts writes them since it took over from pdf-lib's document, which halved a PDF render:
  // the same page, texts, boxes and barcodes (drawn by pdf.js, they differ from the old files' in
  // anti-aliasing alone, none of their dots by more than a quarter of black), in dots under one matrix
  // and without pdf-lib's object streams. USPS files have their DataMatrix from datamatrix.ts since it
  // took over from bwip-js: the same text in ASCII encodation, where bwip-js mixed in C40 and Text.
  it('are the files the renderers have always drawn', async () => {
    const digests: Record<string, string> = {};
    for (const [name, doc] of PINNED)
      digests[name] = createHash('sha256')
        .update((await renderLabel(doc)).bytes)
        .digest('hex');
    expect(digests).toEqual({
      'ups 4x6 pdf': 'f12705fc4eebaf8f0f7ed1281b55bc2aede1b96546b3fd6faf1ea353d8d227b0',
      'ups 4x6 png': '108b1e0f115144136db4ae7ed1ced7b12d41e5035becd76fd33d0f06030d0a1a',
      'ups 4x6 zpl': '9313cbf22376cd6f664a07232188207a64c3b261fc250db653a40c74f329a8d8',
      'fedex 4x8 pdf': 'ab80bf8591b6658b2022038c9e9e2b3abfb33409b46195c4f7591ceedd7057b4',
      'fedex 4x8 png': 'a7b4f3b523b33f5216ab2570262d352c94d5a3587af6f84520a70ec153b4942a',
      'fedex 4x8 zpl': 'c04e4b2ee341cafb7c41f37e7ee44f263c90ffe5c5512b9ae26eb7fcdc43db68',
      'usps letter pdf': '3a7ba1f22b8b8e25cfb06b7d26cb3415de6b2707ebed698aa0a5917dd4aa0440',
      'usps letter png': 'c3c27f8f3d0b8017430f08e295845b0681c43c9b50e5a51067ae765c8f5091ec',
      'usps letter zpl': 'ccc89273c1ddd7045cf1320027cfef1cf5513394b1fe9732e6f4979980367da1',
      'dhl_express 4x6 pdf': 'c3a48ecdd2d50130aca36e640366f6a2dfd10b17a61b6ef77d1aececf9bd3da9',
      'dhl_express 4x6 png': '3cfc3100903f8338e42c3dadc0ac873d0df0e251f63cfd3b7f0c4c35c1a0e45a',
      'dhl_express 4x6 zpl': '77bde600d0aab6e576523b4f68b1f79aff15a74ed7f6f6f801e5d3a4fdff7eb1',
      'abroad, with odd text, pdf': '2962a258490f8809595022fde355bddddd769216ca0f2374321e3793aa57b610',
      'abroad, with odd text, png': 'fb3b35c3399930ab082f181f4f3366adfdace10f032deb6cdce8b57c9c99a0a0',
    });
  });

  /** A PNG's rows as its IDAT chunks hold them, inflated: its pixels, whatever their compression. */
  function pngRows(bytes: Uint8Array): Buffer {
    const png = Buffer.from(bytes);
    const data: Buffer[] = [];
    for (let at = 8; at < png.length; at += 12 + png.readUInt32BE(at)) {
      if (png.toString('latin1', at + 4, at + 8) === 'IDAT')
        data.push(png.subarray(at + 8, at + 8 + png.readUInt32BE(at)));
    }
    return inflateSync(Buffer.concat(data));
  }

  // SHA-256 of each PNG's rows as the renderer drew them before it was made faster (commit 1f0c1ce),
  // but for the USPS DataMatrix, from datamatrix.ts since (see above).
  it('are the images the PNG renderer has always drawn', async () => {
    const digests: Record<string, string> = {};
    for (const [name, doc] of PINNED.filter(([, doc]) => doc.format === 'png'))
      digests[name] = createHash('sha256')
        .update(pngRows((await renderLabel(doc)).bytes))
        .digest('hex');
    expect(digests).toEqual({
      'ups 4x6 png': 'f64db0a62fa319fa1d5f4e70c9748a60f0b3453f4dcdf39c14ff7c889579ff75',
      'fedex 4x8 png': '58673930898dab0bb81672711f4d6c3ecc990d31b994f036447bbbce78299ac6',
      'usps letter png': 'e331ca5170e840c2b7cb735f945fe766908acec9386c48bde73406e7fd1ce342',
      'dhl_express 4x6 png': '82d07eb065434c710b3ecb7fe7ff762e1d839c99f35648ae1ed9cd0ea5738eae',
      'abroad, with odd text, png': 'cbadad96c80dafb30f7c381b2134745ee8914b4c67ea57a85d4c6a71802fc2b9',
    });
  });
});
