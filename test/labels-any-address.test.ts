import fc from 'fast-check';
import { PDFDocument } from 'pdf-lib';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { type Address, AddressSchema, ParcelSchema } from '../src/addresses/schema.js';
import { checkAddress, verifyDestination } from '../src/addresses/verification.js';
import { barcodeShapes } from '../src/labels/render/barcodes.js';
import { type LabelDocument, type LabelFormat, PAGE_SIZES } from '../src/labels/render/document.js';
import { renderLabel } from '../src/labels/render/index.js';
import { layoutLabel } from '../src/labels/render/layout.js';
import { textWidth } from '../src/labels/render/text.js';
import { LABEL_SIZES } from '../src/labels/schema.js';
import { trackingNumberFor } from '../src/labels/tracking-number.js';
import { CARRIERS } from '../src/rates/carriers.js';
import { REFERENCE_MAX_LENGTH } from '../src/shipments/schema.js';

/**
 * Every address the API accepts renders, in every carrier, format and size: whatever a merchant's
 * customer typed (symbols, line breaks, bidirectional overrides, emoji, lone surrogates, a hundred
 * characters of it) must never turn a label download into a 500. Addresses are generated within
 * what the API's checks take, then put through those very checks (the zod schema, which also trims
 * them as the store keeps them, and the address verification) so that only accepted ones count.
 */

/** Text a person, a broken form or an attacker might send: any UTF-16 unit, symbols, long. */
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));
const SYMBOLS = [...'#$%&*@!~^{}[]<>|\\/\'"`;:?,.+=_-() ÄÖÜßéñŁИ東京😀\u202e\u200d\n\t\r\u0000\u00ad'];
const text = (maxLength: number) =>
  fc
    .oneof(
      fc.string({ unit: fc.constantFrom(...SYMBOLS), minLength: 1, maxLength, size: 'max' }),
      fc.string({ unit: anyUnit, minLength: 1, maxLength, size: 'max' }),
      fc.string({ unit: 'binary', minLength: 1, maxLength, size: 'max' }),
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
    )
    // Cut to the bound in UTF-16 units, as zod counts, even through a surrogate pair.
    .map((value) => value.slice(0, maxLength));

/** Places whose state and postal code the verification takes; `null` takes any (no postal format). */
const PLACES: Array<[country: string, state: string | null, zip: string | null]> = [
  ['US', 'CA', '94104'],
  ['US', 'NY', '10118-0110'],
  ['US', 'AK', '99501'],
  ['US', 'PR', '00901'],
  ['CA', 'ON', 'M5V 3L9'],
  ['AU', 'NSW', '2000'],
  ['GB', null, 'SW1A 2AA'],
  ['DE', null, '10117'],
  ['JP', null, '100-0001'],
  ['FR', null, '75008'],
  // Countries without postal codes take any postal code: symbols alone too.
  ['HK', null, null],
  ['AE', null, null],
  ['IE', null, null],
  ['JM', null, null],
];

const place = fc.constantFrom(...PLACES).chain(([country, state, zip]) =>
  fc.record({
    country: fc.constant(country),
    state: state === null ? text(50) : fc.constant(state),
    zip: zip === null ? text(20) : fc.constant(zip),
  }),
);

const rawAddress = fc
  .tuple(
    place,
    fc.record(
      { name: text(100), company: text(100), address1: text(100), address2: text(100), city: text(100) },
      { requiredKeys: ['name', 'address1', 'city'] },
    ),
  )
  .map(([where, lines]) => ({ ...lines, ...where }));

/** An address as the API keeps it, if it accepts it. */
function accepted(raw: unknown, role: 'from' | 'to'): Address | undefined {
  const parsed = AddressSchema.safeParse(raw);
  if (!parsed.success) return undefined;
  try {
    if (role === 'from') checkAddress(parsed.data, 'from');
    else verifyDestination(parsed.data);
  } catch {
    return undefined;
  }
  return parsed.data;
}

const acceptedAddress = (role: 'from' | 'to') =>
  rawAddress.map((raw) => accepted(raw, role)).filter((address): address is Address => address !== undefined);

const CROCKFORD = [...'0123456789ABCDEFGHJKMNPQRSTVWXYZ'];
const labelId = fc
  .string({ unit: fc.constantFrom(...CROCKFORD), minLength: 26, maxLength: 26 })
  .map((suffix) => `lbl_${suffix}`);

const shipment = fc.record({
  from: acceptedAddress('from'),
  to: acceptedAddress('to'),
  parcel: fc
    .record({
      weight: fc.integer({ min: 1, max: 70_000 }),
      length: fc.integer({ min: 1, max: 300 }),
      width: fc.integer({ min: 1, max: 300 }),
      height: fc.integer({ min: 1, max: 300 }),
    })
    .map((parcel) => ParcelSchema.parse(parcel)),
  reference: fc.option(text(REFERENCE_MAX_LENGTH), { nil: null }),
  labelId,
  // From when the sandbox was written to the end of every account clock.
  createdAt: fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(9999, 11, 31, 23, 59, 59) }),
  // Each carrier's service, by position: the names differ in length.
  service: fc.nat(),
});

/** ZPL as a printer reads it: commands on lines of printable ASCII, field data free of `^` and `~`. */
function expectWellFormedZpl(zpl: string): void {
  expect(zpl.startsWith('^XA\n')).toBe(true);
  expect(zpl.endsWith('^XZ\n')).toBe(true);
  expect(zpl).toMatch(/^[\x20-\x7e\n]*$/);
  for (const field of zpl.split('^FD').slice(1)) expect(field).toMatch(/^[^^~\n]*\^FS/);
}

type Generated = typeof shipment extends fc.Arbitrary<infer T> ? T : never;

/** The label of a generated shipment by each carrier (its service chosen by the run), at each size. */
function* labels(generated: Generated, format: LabelFormat): Generator<LabelDocument> {
  for (const carrier of CARRIERS) {
    const service = carrier.services[generated.service % carrier.services.length];
    if (!service) throw new Error(`${carrier.slug} has no services`);
    for (const size of LABEL_SIZES) {
      yield {
        labelId: generated.labelId,
        trackingNumber: trackingNumberFor(carrier.slug, generated.labelId),
        carrier: { slug: carrier.slug, name: carrier.name },
        service: { code: service.code, name: service.name },
        from: generated.from,
        to: generated.to,
        parcel: generated.parcel,
        reference: generated.reference,
        createdAt: generated.createdAt,
        size,
        format,
      };
    }
  }
}

/**
 * A failing run is shrunk to the smallest address that fails; renders take a while, so shrinking
 * stops after this long and reports the smallest found so far.
 */
const SHRINK_AT_MOST = { interruptAfterTimeLimit: 40_000 };

describe('labels for any address the API accepts', { timeout: 60_000 }, () => {
  // Where a label can fail on what it is given: the shared layout (every text fitted to its span),
  // the barcodes' encoders and the ZPL. Cheap enough to try many addresses.
  it('lay out, encode their barcodes and write ZPL, for every carrier and size', async () => {
    await fc.assert(
      fc.asyncProperty(shipment, async (generated) => {
        for (const doc of labels(generated, 'zpl')) {
          const layout = layoutLabel(doc);
          for (const item of layout.items) {
            if (item.kind === 'text')
              expect(textWidth(item.text, item.size, item.bold)).toBeLessThanOrEqual(item.width);
            // The barcodes are the same at every size.
            else if (item.kind === 'barcode' && doc.size === '4x6')
              expect((await barcodeShapes(item)).length).toBeGreaterThan(0);
          }
          expectWellFormedZpl(new TextDecoder().decode((await renderLabel(doc)).bytes));
        }
      }),
      { numRuns: 40, ...SHRINK_AT_MOST },
    );
  });

  // The files themselves: fewer addresses, each in all 36 files. pngjs decodes the 4x6 PNGs (a
  // letter page takes it a quarter of a second); the larger ones' header gives their size.
  it('render to PDF and PNG files that parse, for every carrier and size', async () => {
    await fc.assert(
      fc.asyncProperty(shipment, async (generated) => {
        for (const format of ['pdf', 'png'] as const) {
          for (const doc of labels(generated, format)) {
            const page = PAGE_SIZES[doc.size];
            const { bytes } = await renderLabel(doc);
            if (format === 'pdf') {
              const pdf = await PDFDocument.load(bytes, { updateMetadata: false });
              expect(pdf.getPageCount()).toBe(1);
              const { width, height } = pdf.getPage(0).getSize();
              expect([width, height]).toEqual([page.widthPt, page.heightPt]);
            } else if (doc.size === '4x6') {
              const png = PNG.sync.read(Buffer.from(bytes));
              expect([png.width, png.height]).toEqual([page.widthDots, page.heightDots]);
            } else {
              const header = Buffer.from(bytes).subarray(0, 24);
              expect(header.toString('latin1', 12, 16)).toBe('IHDR');
              expect([header.readUInt32BE(16), header.readUInt32BE(20)]).toEqual([
                page.widthDots,
                page.heightDots,
              ]);
            }
          }
        }
      }),
      { numRuns: 3, ...SHRINK_AT_MOST },
    );
  });
});
