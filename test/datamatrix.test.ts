import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { prepareZXingModule, readBarcodes } from 'zxing-wasm/reader';
import { barcodeShapes } from '../src/labels/render/barcodes.js';
import { encodeDataMatrix } from '../src/labels/render/datamatrix.js';
import type { LabelDocument, LabelSize } from '../src/labels/render/document.js';
import { type BarcodeItem, layoutLabel } from '../src/labels/render/layout.js';

const require = createRequire(import.meta.url);
const bwip = require('bwip-js') as {
  raw(symbology: string, text: string, options: string): Array<{ pixs: number[]; pixx: number }>;
};

beforeAll(async () => {
  await prepareZXingModule({
    overrides: {
      wasmBinary: readFileSync(require.resolve('zxing-wasm/reader/zxing_reader.wasm')).buffer as ArrayBuffer,
    },
    fireImmediately: true,
  });
});

/** A symbol as a bitmap a reader is given: 3 pixels a module, inside a two-module quiet zone. */
function bitmap(size: number, dark: ArrayLike<number>): ImageData {
  const [scale, quiet] = [3, 2];
  const width = (size + 2 * quiet) * scale;
  const data = new Uint8ClampedArray(width * width * 4).fill(255);
  for (let y = 0; y < width; y++) {
    for (let x = 0; x < width; x++) {
      const [row, column] = [Math.floor(y / scale) - quiet, Math.floor(x / scale) - quiet];
      const inside = row >= 0 && row < size && column >= 0 && column < size;
      if (inside && dark[row * size + column] === 1)
        data.fill(0, (y * width + x) * 4, (y * width + x) * 4 + 3);
    }
  }
  return { data, width, height: width, colorSpace: 'srgb' } as ImageData;
}

async function decode(size: number, dark: ArrayLike<number>): Promise<string | undefined> {
  const [result] = await readBarcodes(bitmap(size, dark), {
    formats: ['DataMatrix'],
    tryHarder: true,
    textMode: 'Plain',
  });
  return result?.text;
}

const printable = fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code));
const digit = fc.integer({ min: 0, max: 9 }).map(String);
/** Printable ASCII with runs of digits, which ASCII encodation packs in pairs. */
const payload = (minLength: number, maxLength: number) =>
  fc.array(fc.oneof(printable, digit), { minLength, maxLength }).map((chars) => chars.join(''));

describe('DataMatrix encoder', () => {
  it('writes symbols a reader decodes to the same text, for every length up to 110', async () => {
    for (let length = 1; length <= 110; length++) {
      const [text] = fc.sample(payload(length, length), { numRuns: 1, seed: length });
      const { size, dark } = encodeDataMatrix(text as string);
      expect(await decode(size, dark)).toBe(text);
    }
  });

  it('writes symbols a reader decodes to the same text, for any printable text', async () => {
    await fc.assert(
      fc.asyncProperty(payload(1, 120), async (text) => {
        const { size, dark } = encodeDataMatrix(text);
        expect(await decode(size, dark)).toBe(text);
      }),
      { numRuns: 200 },
    );
  });

  // Where bwip-js also encodes in ASCII (digits alone), the two must agree module for module: the
  // same codewords, pads, error correction, interleaving and placement, in every square size.
  it('draws the very symbol bwip-js draws for digits, in each of the 24 square sizes', () => {
    const sizes = new Set<number>();
    for (const codewords of [1, 3, 4, 5, 6, 8, 12, 18, 22, 30, 36, 44, 62, 86, 114, 144, 174, 204, 280]) {
      for (const length of [2 * codewords - 1, 2 * codewords]) {
        const digits = Array.from({ length }, (_, index) => String((index * 7 + length) % 10)).join('');
        const ours = encodeDataMatrix(digits);
        const [theirs] = bwip.raw('datamatrix', digits, '');
        expect([ours.size, [...ours.dark]]).toEqual([theirs?.pixx, theirs?.pixs]);
        sizes.add(ours.size);
      }
    }
    for (const codewords of [368, 456, 576, 696, 816, 1050, 1304, 1558]) {
      const digits = '0123456789'.repeat(codewords).slice(0, 2 * codewords);
      const ours = encodeDataMatrix(digits);
      const [theirs] = bwip.raw('datamatrix', digits, '');
      expect([ours.size, [...ours.dark]]).toEqual([theirs?.pixx, theirs?.pixs]);
      sizes.add(ours.size);
    }
    expect(sizes.size).toBe(24);
  });

  it('writes error correction a reader repairs damage with', async () => {
    const text = '9400111899223197428490|usps|ground_advantage|10118|US|1200G|lbl_01JD3S5Z7QK2N8W4X6Y9A0B1C2';
    const { size, dark } = encodeDataMatrix(text);
    const damaged = Uint8Array.from(dark);
    // A 4x4 blot inside the first data region: a few codewords, well within the 48 ECC codewords.
    for (let row = 5; row < 9; row++)
      for (let column = 5; column < 9; column++) damaged[row * size + column] = 1;
    expect(damaged).not.toEqual(dark);
    expect(await decode(size, damaged)).toBe(text);
  });

  it('refuses what it does not encode, so that bwip-js encodes it', async () => {
    expect(() => encodeDataMatrix('Zürich')).toThrow(RangeError);
    expect(() => encodeDataMatrix('tab\there')).toThrow(RangeError);
    expect(() => encodeDataMatrix('x'.repeat(1559))).toThrow(RangeError);
    const item: BarcodeItem = {
      kind: 'barcode',
      symbology: 'datamatrix',
      x: 0,
      y: 0,
      width: 296,
      height: 216,
      module: 5,
      data: 'Zürich',
      maxicode: null,
    };
    expect((await barcodeShapes(item)).length).toBeGreaterThan(0);
  });

  // ASCII encodation alone makes a symbol one size larger than bwip-js's C40 or Text at times: the
  // longest payloads must still fit the layout's box, on every page.
  it.each<LabelSize>(['4x6', '4x8', 'letter'])(
    'fits the longest payloads in the %s layout box',
    async (size) => {
      const doc: LabelDocument = {
        labelId: 'lbl_01JD3S5Z7QK2N8W4X6Y9A0B1C2',
        trackingNumber: '9400111899223197428490',
        carrier: { slug: 'regionalpost', name: 'Regional Post' },
        service: { code: 'international_priority_plus', name: 'International Priority Plus' },
        from: {
          name: 'A',
          address1: '1 Main St',
          city: 'Austin',
          state: 'TX',
          zip: '73301',
          country: 'US',
        },
        to: {
          name: 'B',
          address1: '2 High St',
          city: 'Hamilton',
          state: 'HM',
          zip: 'W!X Y/Z-Q ~',
          country: 'BM',
        },
        parcel: { weight: 70_000, length: 30, width: 20, height: 10 },
        reference: null,
        createdAt: Date.UTC(2026, 10, 22),
        size,
        format: 'pdf',
      };
      const item = layoutLabel(doc).items.find(
        (candidate): candidate is BarcodeItem =>
          candidate.kind === 'barcode' && candidate.symbology === 'datamatrix',
      );
      if (!item) throw new Error('no DataMatrix');
      expect(item.data.length).toBeGreaterThanOrEqual(100);
      const symbol = encodeDataMatrix(item.data);
      expect(symbol.size * item.module).toBeLessThanOrEqual(Math.min(item.width, item.height));
      // The shapes are this encoder's symbol, not a fallback's, and stay inside the box.
      const shapes = await barcodeShapes(item);
      const dark = shapes.reduce(
        (sum, shape) => sum + (shape.kind === 'rect' ? shape.width / item.module : 0),
        0,
      );
      expect(dark).toBe(symbol.dark.reduce((sum, on) => sum + on, 0));
      for (const shape of shapes) {
        if (shape.kind !== 'rect') throw new Error('a DataMatrix is all rectangles');
        expect(shape.x + shape.width).toBeLessThanOrEqual(item.x + item.width);
        expect(shape.y + shape.height).toBeLessThanOrEqual(item.y + item.height);
      }
    },
  );
});
