import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { crc32, deflateSync } from 'node:zlib';
import { Resvg } from '@resvg/resvg-js';
import opentype from 'opentype.js';
import { type BarcodeShape, barcodeShapes } from './barcodes.js';
import { DOTS_PER_INCH, type LabelDocument } from './document.js';
import { type BoxItem, layoutLabel, type TextItem } from './layout.js';

/**
 * A 203-dpi PNG, one pixel a printer dot, black and white at one bit a pixel as carriers' PNG labels
 * are: that is what a thermal printer prints, and it keeps files small and quick to compress.
 *
 * Text is set in Arimo, a font that ships in an npm package and has the metrics of the PDF's
 * Helvetica. Each glyph is drawn once by resvg at each size it is used in and kept; a label then only
 * copies glyphs, boxes and barcode cells into its bitmap. (Letting resvg set all the label's text took
 * 30 ms or more: it reads the font's tables again for every glyph.)
 *
 * Why the bitmap is painted here rather than the whole label drawn as one SVG by resvg: that was
 * tried (boxes, barcode shapes and glyph outlines in one document, thresholded to black and white).
 * It gave the same label (its barcodes read; 852 of a 4x6's 989,016 dots differ, at glyph edges),
 * but took 15 ms of CPU at best and 21 ms at the median for a 4x6, against 4 and 8.5 ms here, and
 * 40 and 79 ms for a letter page, against 5 and 9.5 ms: resvg fills and anti-aliases a full RGBA
 * page (15 MB for a letter page) where this bitmap is one bit a dot and text is copied from the
 * glyph cache. Ten first downloads at once queue on the render threads, so that factor is what a
 * merchant's test suite would wait.
 */
export async function renderPng(doc: LabelDocument): Promise<Uint8Array> {
  const layout = layoutLabel(doc);
  const bitmap = whiteBitmap(layout.width, layout.height);
  for (const item of layout.items) {
    if (item.kind === 'box') drawBox(bitmap, item);
    else if (item.kind === 'text') drawText(bitmap, item);
    else for (const shape of await barcodeShapes(item)) paint(bitmap, shape, true);
  }
  return encodePng(bitmap);
}

// ---------------------------------------------------------------------------------------------
// The bitmap

/** A 1-bit bitmap laid out as PNG rows: a filter byte (0, none), then 8 dots a byte, 1 for white. */
interface Bitmap {
  width: number;
  height: number;
  stride: number;
  rows: Buffer;
}

function whiteBitmap(width: number, height: number): Bitmap {
  const stride = 1 + Math.ceil(width / 8);
  const rows = Buffer.alloc(stride * height, 0xff);
  for (let y = 0; y < height; y++) rows[y * stride] = 0;
  return { width, height, stride, rows };
}

function setDot(bitmap: Bitmap, x: number, y: number, black: boolean): void {
  if (x < 0 || y < 0 || x >= bitmap.width || y >= bitmap.height) return;
  const index = y * bitmap.stride + 1 + (x >> 3);
  const bit = 0x80 >> (x & 7);
  const byte = bitmap.rows[index] ?? 0xff;
  bitmap.rows[index] = black ? byte & ~bit : byte | bit;
}

/** Sets the dots of a byte that `mask` has: black, or white. */
function setMasked(rows: Buffer, index: number, mask: number, black: boolean): void {
  rows[index] = black ? (rows[index] as number) & ~mask : (rows[index] as number) | mask;
}

/**
 * Sets the dots of row `y` from `x0` to `x1` (excluded, both within the bitmap): the bytes at either
 * end through a mask of their dots in the span, those between whole.
 */
function setDots(bitmap: Bitmap, y: number, x0: number, x1: number, black: boolean): void {
  if (x0 >= x1) return;
  const { rows } = bitmap;
  const row = y * bitmap.stride + 1;
  const first = row + (x0 >> 3);
  const last = row + ((x1 - 1) >> 3);
  const head = 0xff >> (x0 & 7);
  const tail = (0xff << (7 - ((x1 - 1) & 7))) & 0xff;
  if (first === last) {
    setMasked(rows, first, head & tail, black);
    return;
  }
  setMasked(rows, first, head, black);
  const whole = black ? 0x00 : 0xff;
  for (let index = first + 1; index < last; index++) rows[index] = whole;
  setMasked(rows, last, tail, black);
}

/**
 * Sets every dot whose centre lies inside the shape. Rectangles are filled a row at a time; polygons
 * and rings test each dot of their bounding box.
 */
function paint(bitmap: Bitmap, shape: BarcodeShape, black: boolean): void {
  const box = (minX: number, minY: number, maxX: number, maxY: number) => ({
    x0: Math.max(0, Math.floor(minX)),
    x1: Math.min(bitmap.width, Math.ceil(maxX)),
    y0: Math.max(0, Math.floor(minY)),
    y1: Math.min(bitmap.height, Math.ceil(maxY)),
  });
  switch (shape.kind) {
    case 'rect': {
      const { x0, x1, y0, y1 } = box(shape.x, shape.y, shape.x + shape.width, shape.y + shape.height);
      for (let y = y0; y < y1; y++) if (x0 < x1) setDots(bitmap, y, x0, x1, black);
      return;
    }
    case 'polygon': {
      const { points } = shape;
      let minY = Infinity;
      let maxY = -Infinity;
      for (const point of points) {
        minY = Math.min(minY, point[1]);
        maxY = Math.max(maxY, point[1]);
      }
      const y0 = Math.max(0, Math.floor(minY));
      const y1 = Math.min(bitmap.height, Math.ceil(maxY));
      for (let y = y0; y < y1; y++) {
        // Where the row's centre line crosses the outline: the dots a dot or more inside those ends are
        // inside; the few near them are tested, so that a dot on the edge goes as the test says.
        const span = rowSpan(points, y + 0.5);
        if (!span) continue;
        const from = Math.max(0, Math.floor(span[0] - 1.5));
        const to = Math.min(bitmap.width, Math.ceil(span[1] + 0.5));
        let x = from;
        for (; x < to && x + 0.5 < span[0] + 1; x++)
          if (insideConvex(points, x + 0.5, y + 0.5)) setDot(bitmap, x, y, black);
        const inner = x;
        while (x < to && x + 0.5 <= span[1] - 1) x++;
        setDots(bitmap, y, inner, x, black);
        for (; x < to; x++) if (insideConvex(points, x + 0.5, y + 0.5)) setDot(bitmap, x, y, black);
      }
      return;
    }
    case 'ring': {
      const { cx, cy, outer, inner } = shape;
      const { x0, x1, y0, y1 } = box(cx - outer, cy - outer, cx + outer, cy + outer);
      for (let y = y0; y < y1; y++) {
        for (let x = x0; x < x1; x++) {
          const distance = (x + 0.5 - cx) ** 2 + (y + 0.5 - cy) ** 2;
          if (distance <= outer ** 2 && distance >= inner ** 2) setDot(bitmap, x, y, black);
        }
      }
      return;
    }
  }
}

/** The leftmost and rightmost points where the line at height `y` meets a convex polygon's edges. */
function rowSpan(points: ReadonlyArray<readonly [number, number]>, y: number): [number, number] | undefined {
  let left = Infinity;
  let right = -Infinity;
  for (let index = 0; index < points.length; index++) {
    const a = points[index] as readonly [number, number];
    const b = points[(index + 1) % points.length] as readonly [number, number];
    if ((a[1] - y) * (b[1] - y) > 0) continue;
    // A level edge on the line meets it all along; any other edge at one point.
    const from = a[1] === b[1] ? a[0] : a[0] + ((y - a[1]) * (b[0] - a[0])) / (b[1] - a[1]);
    const to = a[1] === b[1] ? b[0] : from;
    left = Math.min(left, from, to);
    right = Math.max(right, from, to);
  }
  return left <= right ? [left, right] : undefined;
}

/** Whether (x, y) is inside a convex polygon, whichever way round its points go. */
function insideConvex(points: ReadonlyArray<readonly [number, number]>, x: number, y: number): boolean {
  let sign = 0;
  for (let index = 0; index < points.length; index++) {
    const a = points[index] as readonly [number, number];
    const b = points[(index + 1) % points.length] as readonly [number, number];
    const cross = (b[0] - a[0]) * (y - a[1]) - (b[1] - a[1]) * (x - a[0]);
    if (cross === 0) continue;
    if (sign === 0) sign = Math.sign(cross);
    else if (Math.sign(cross) !== sign) return false;
  }
  return true;
}

function drawBox(bitmap: Bitmap, item: BoxItem): void {
  const rect = (x: number, y: number, width: number, height: number) =>
    paint(bitmap, { kind: 'rect', x, y, width, height }, true);
  const t = item.thickness;
  if (t === null || 2 * t >= Math.min(item.width, item.height)) {
    rect(item.x, item.y, item.width, item.height);
    return;
  }
  rect(item.x, item.y, item.width, t);
  rect(item.x, item.y + item.height - t, item.width, t);
  rect(item.x, item.y + t, t, item.height - 2 * t);
  rect(item.x + item.width - t, item.y + t, t, item.height - 2 * t);
}

// ---------------------------------------------------------------------------------------------
// Text

interface Face {
  font: opentype.Font;
  glyphs: Map<string, opentype.Glyph>;
}

const faces = new Map<boolean, Face>();

/** Parsed once per process; the files come through the package so `src/` and `dist/` both find them. */
function face(bold: boolean): Face {
  let loaded = faces.get(bold);
  if (!loaded) {
    const file = bold ? '700Bold/Arimo_700Bold.ttf' : '400Regular/Arimo_400Regular.ttf';
    const bytes = readFileSync(createRequire(import.meta.url).resolve(`@expo-google-fonts/arimo/${file}`));
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    loaded = { font: opentype.parse(buffer), glyphs: new Map() };
    faces.set(bold, loaded);
  }
  return loaded;
}

function glyphOf(face: Face, char: string): opentype.Glyph {
  let glyph = face.glyphs.get(char);
  if (!glyph) {
    glyph = face.font.charToGlyph(char);
    face.glyphs.set(char, glyph);
  }
  return glyph;
}

/** A glyph's dots at one size: `left` and `top` place its box relative to the pen on the baseline. */
interface GlyphBitmap {
  left: number;
  top: number;
  width: number;
  height: number;
  dots: Uint8Array;
  /**
   * The dots packed as the bitmap's rows are, 8 to a byte, once for each of the 8 bit offsets at which
   * the glyph can start in a byte (made on first use): a glyph is then copied a byte at a time.
   */
  packed: Array<PackedGlyph | undefined>;
}

interface PackedGlyph {
  /** Bytes a row. */
  stride: number;
  /** 1 for each dark dot, shifted right by the offset. */
  bits: Uint8Array;
}

// A label uses a few dozen glyphs at a dozen sizes; the bound only guards against odd input.
const GLYPH_CACHE_LIMIT = 20_000;
const glyphBitmaps = new Map<string, GlyphBitmap>();

function glyphBitmap(glyph: opentype.Glyph, bold: boolean, size: number): GlyphBitmap {
  const key = `${bold ? 'b' : 'r'}${glyph.index}@${size}`;
  let cached = glyphBitmaps.get(key);
  if (!cached) {
    cached = rasterise(glyph, size);
    if (glyphBitmaps.size >= GLYPH_CACHE_LIMIT) glyphBitmaps.clear();
    glyphBitmaps.set(key, cached);
  }
  return cached;
}

/** The glyph's outline drawn by resvg, a dot black where the outline covers at least half of it. */
function rasterise(glyph: opentype.Glyph, size: number): GlyphBitmap {
  const path = glyph.getPath(0, 0, size);
  const box = path.getBoundingBox();
  const left = Math.floor(box.x1);
  const top = Math.floor(box.y1);
  const width = Math.ceil(box.x2) - left;
  const height = Math.ceil(box.y2) - top;
  if (!(width > 0 && height > 0))
    return { left: 0, top: 0, width: 0, height: 0, dots: new Uint8Array(0), packed: [] };
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="${left} ${top} ${width} ${height}"><path d="${path.toPathData(3)}"/></svg>`;
  const image = new Resvg(svg, { font: { loadSystemFonts: false }, fitTo: { mode: 'original' } }).render();
  const rgba = image.pixels;
  const dots = new Uint8Array(width * height);
  for (let index = 0; index < dots.length; index++) dots[index] = (rgba[index * 4 + 3] ?? 0) >= 128 ? 1 : 0;
  return { left, top, width, height, dots, packed: [] };
}

function packed(glyph: GlyphBitmap, offset: number): PackedGlyph {
  let bytes = glyph.packed[offset];
  if (!bytes) {
    const stride = Math.ceil((offset + glyph.width) / 8);
    const bits = new Uint8Array(stride * glyph.height);
    for (let y = 0; y < glyph.height; y++) {
      for (let x = 0; x < glyph.width; x++) {
        const at = offset + x;
        const index = y * stride + (at >> 3);
        if (glyph.dots[y * glyph.width + x]) bits[index] = (bits[index] ?? 0) | (0x80 >> (at & 7));
      }
    }
    bytes = { stride, bits };
    glyph.packed[offset] = bytes;
  }
  return bytes;
}

/** Copies a glyph's dark dots into the bitmap with its box's top left at (x0, y0): black, or white. */
function copyGlyph(bitmap: Bitmap, glyph: GlyphBitmap, x0: number, y0: number, black: boolean): void {
  const inside = x0 >= 0 && y0 >= 0 && x0 + glyph.width <= bitmap.width && y0 + glyph.height <= bitmap.height;
  if (!inside) {
    // Partly off the page: dot by dot, each one checked.
    for (let y = 0; y < glyph.height; y++) {
      const row = y * glyph.width;
      for (let x = 0; x < glyph.width; x++) if (glyph.dots[row + x]) setDot(bitmap, x0 + x, y0 + y, black);
    }
    return;
  }
  const { stride, bits } = packed(glyph, x0 & 7);
  const rows = bitmap.rows;
  for (let y = 0; y < glyph.height; y++) {
    const target = (y0 + y) * bitmap.stride + 1 + (x0 >> 3);
    const source = y * stride;
    for (let byte = 0; byte < stride; byte++) {
      const mask = bits[source + byte] as number;
      if (mask === 0) continue;
      setMasked(rows, target + byte, mask, black);
    }
  }
}

function drawText(bitmap: Bitmap, item: TextItem): void {
  const loaded = face(item.bold);
  const scale = item.size / loaded.font.unitsPerEm;
  // NFC so that accented letters use the font's precomposed glyphs.
  const glyphs = [...item.text.normalize('NFC')].map((char) => glyphOf(loaded, char));
  const advance = glyphs.reduce((sum, glyph) => sum + (glyph.advanceWidth ?? 0) * scale, 0);
  let pen = item.align === 'center' ? item.x + (item.width - advance) / 2 : item.x;
  const black = !item.inverse;
  for (const glyph of glyphs) {
    const dots = glyphBitmap(glyph, item.bold, item.size);
    copyGlyph(bitmap, dots, Math.round(pen) + dots.left, item.baseline + dots.top, black);
    pen += (glyph.advanceWidth ?? 0) * scale;
  }
}

// ---------------------------------------------------------------------------------------------
// PNG
//
// Written here because no maintained encoder writes this file: pngjs writes 8- or 16-bit samples only
// and no pHYs chunk (a 4x6 label of 10 to 11 KB here came to 17 KB in 16 ms at its defaults, or 33 KB in
// 3 ms at level 6 unfiltered, where this takes under a millisecond), and resvg's asPng() writes RGBA,
// ten times larger. Node's zlib does the compression and the checksums; what is left is the chunks.

/**
 * zlib's level for the image: the fastest of its matching strategies, with a little searching. On a
 * 4x6 label it takes 0.2 ms where the default level (6) took 0.7 ms, a quarter of the render that
 * was not the barcodes, for files a sixth larger (11.4 KB against 9.7 KB); a letter page takes 0.6 ms
 * against 1.7 ms, for 21 KB against 17 KB. (Level 9 makes files 4 % smaller than level 6 in six
 * times its time.)
 */
const IDAT_LEVEL = 3;

const PNG_SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);

function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  out.set(data, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

function encodePng(bitmap: Bitmap): Uint8Array {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(bitmap.width, 0);
  header.writeUInt32BE(bitmap.height, 4);
  header.set([1, 0, 0, 0, 0], 8); // 1-bit greyscale, deflate, adaptive filtering, no interlace
  // pHYs in dots per metre, so viewers and printers know the image is 203 dpi.
  const density = Math.round(DOTS_PER_INCH / 0.0254);
  const physical = Buffer.alloc(9);
  physical.writeUInt32BE(density, 0);
  physical.writeUInt32BE(density, 4);
  physical.writeUInt8(1, 8);
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk('IHDR', header),
    chunk('pHYs', physical),
    chunk('IDAT', deflateSync(bitmap.rows, { level: IDAT_LEVEL })),
    chunk('IEND', new Uint8Array(0)),
  ]);
}
