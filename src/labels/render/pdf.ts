import { StandardFontEmbedder, StandardFonts } from 'pdf-lib';
import { type BarcodeShape, barcodeShapes } from './barcodes.js';
import { type LabelDocument, PAGE_SIZES, POINTS_PER_DOT, SAMPLE_MARK } from './document.js';
import { type BoxItem, layoutLabel, type TextItem } from './layout.js';
import { pdfFile } from './pdf-file.js';

/**
 * A one-page PDF of the page size the label asks for. Text is in Helvetica, one of the PDF standard
 * fonts that every reader has: nothing is embedded, so a label renders in a few milliseconds (embedding
 * and subsetting a TrueType font took over 100 ms) and stays small. pdf-lib gives the fonts' metrics
 * and encoding; the file itself is written by pdf-file.ts.
 *
 * The page is drawn in the layout's own units, printer dots from the top left: one matrix maps them
 * to points from the bottom left, so that bars, cells and boxes, whole dots, are written as the small
 * integers they are (formatting fractions of a point was 7 % of a render), and the barcodes' forms,
 * painted under that matrix, are in dots too.
 */
export async function renderPdf(doc: LabelDocument): Promise<Uint8Array> {
  const layout = layoutLabel(doc);
  const geometry = PAGE_SIZES[doc.size];
  const content: string[] = [`${POINTS_PER_DOT} 0 0 ${-POINTS_PER_DOT} 0 ${geometry.heightPt} cm`];
  const forms: Record<string, string> = {};
  for (const item of layout.items) {
    if (item.kind === 'text') content.push(textOperators(item));
    else if (item.kind === 'box') content.push(boxOperators(item));
    else {
      const name = `Barcode${Object.keys(forms).length + 1}`;
      forms[name] = barcodeForm(await barcodeShapes(item));
      content.push(`/${name} Do`);
    }
  }
  return pdfFile({
    widthPt: geometry.widthPt,
    heightPt: geometry.heightPt,
    formBox: [layout.width, layout.height],
    content: content.join('\n'),
    fonts: { [REGULAR]: StandardFonts.Helvetica, [BOLD]: StandardFonts.HelveticaBold },
    forms,
    info: {
      title: `${doc.carrier.name} label ${doc.trackingNumber}`,
      subject: SAMPLE_MARK,
      creator: 'Shipping Sandbox',
      // The label's own time, not the render's: the same label is the same bytes.
      created: doc.createdAt,
    },
  });
}

/** The fonts' resource names. */
const REGULAR = 'F1';
const BOLD = 'F2';

interface Font {
  name: typeof REGULAR | typeof BOLD;
  metrics: StandardFontEmbedder;
}

let fonts: { regular: Font; bold: Font } | undefined;

/** The standard fonts' metrics and encoding, read once per thread. */
function standardFonts(): { regular: Font; bold: Font } {
  // pdf-lib's embedder names the fonts by its own copy of the enum: the same strings.
  const load = (font: StandardFonts) => StandardFontEmbedder.for(font as unknown as FontName);
  fonts ??= {
    regular: { name: REGULAR, metrics: load(StandardFonts.Helvetica) },
    bold: { name: BOLD, metrics: load(StandardFonts.HelveticaBold) },
  };
  return fonts;
}

type FontName = Parameters<typeof StandardFontEmbedder.for>[0];

/** A fraction of a dot, to a thousandth: far finer than any printer. */
const num = (value: number) => String(Math.round(value * 1000) / 1000);

/**
 * One text, black or white (on a black box drawn before it). The text matrix turns the page's
 * downward axis up again, so that glyphs stand upright on the baseline.
 */
function textOperators(item: TextItem): string {
  const font = item.bold ? standardFonts().bold : standardFonts().regular;
  const text = winAnsi(font.metrics, item.text);
  const width = font.metrics.widthOfTextAtSize(text, item.size);
  const left = item.align === 'center' ? item.x + (item.width - width) / 2 : item.x;
  return [
    'BT',
    item.inverse ? '1 g' : '0 g',
    `/${font.name} ${item.size} Tf`,
    // The layout's texts are one line each (printableText); the leading stays, so files keep their bytes.
    `${item.size} TL`,
    `1 0 0 -1 ${num(left)} ${item.baseline} Tm`,
    `${font.metrics.encodeText(text).toString()} Tj`,
    'ET',
  ].join('\n');
}

/**
 * The standard fonts cover WinAnsi (Western European) only, and pdf-lib throws on anything else:
 * accents outside it are dropped, other characters become `?`.
 */
function winAnsi(font: StandardFontEmbedder, text: string): string {
  const supported = (char: string) => font.encoding.canEncodeUnicodeCodePoint(char.codePointAt(0) ?? 0);
  let out = '';
  for (const char of text) {
    if (supported(char)) {
      out += char;
      continue;
    }
    const base = char.normalize('NFD').replace(/\p{M}/gu, '');
    out += [...base].every(supported) && base ? base : '?';
  }
  return out;
}

/** A filled box, or its border drawn inside it as ZPL's `^GB` does, as one path. */
function boxOperators(item: BoxItem): string {
  const { x, y, width, height } = item;
  const t = item.thickness;
  const rects =
    t === null || 2 * t >= Math.min(width, height)
      ? [[x, y, width, height]]
      : [
          [x, y, width, t],
          [x, y + height - t, width, t],
          [x, y + t, t, height - 2 * t],
          [x + width - t, y + t, t, height - 2 * t],
        ];
  return `0 g\n${rects.map((rect) => `${rect.join(' ')} re`).join('\n')}\nf`;
}

// Four Bézier arcs make a circle to within 0.03%.
const KAPPA = 0.5522847498;

/**
 * All of a barcode's shapes as one path filled with the even-odd rule (they never overlap, and a
 * ring's inner circle is its hole): a form XObject's content, in dots. A MaxiCode is a few thousand
 * path operators, and building them as pdf-lib operator objects (or parsing them with drawSvgPath)
 * took longer than the rest of the label. Bars and cells are whole dots, and hexagons and rings come
 * rounded to a hundredth of one (barcodes.ts).
 */
function barcodeForm(shapes: readonly BarcodeShape[]): string {
  const path: string[] = ['0 g'];
  for (const shape of shapes) {
    if (shape.kind === 'rect') {
      path.push(`${shape.x} ${shape.y} ${shape.width} ${shape.height} re`);
    } else if (shape.kind === 'polygon') {
      shape.points.forEach(([x, y], index) => {
        path.push(`${x} ${y} ${index === 0 ? 'm' : 'l'}`);
      });
      path.push('h');
    } else {
      const { cx, cy } = shape;
      for (const r of shape.inner > 0 ? [shape.outer, shape.inner] : [shape.outer]) {
        const k = r * KAPPA;
        path.push(
          `${num(cx + r)} ${cy} m`,
          `${num(cx + r)} ${num(cy + k)} ${num(cx + k)} ${num(cy + r)} ${cx} ${num(cy + r)} c`,
          `${num(cx - k)} ${num(cy + r)} ${num(cx - r)} ${num(cy + k)} ${num(cx - r)} ${cy} c`,
          `${num(cx - r)} ${num(cy - k)} ${num(cx - k)} ${num(cy - r)} ${cx} ${num(cy - r)} c`,
          `${num(cx + k)} ${num(cy - r)} ${num(cx + r)} ${num(cy - k)} ${num(cx + r)} ${cy} c`,
          'h',
        );
      }
    }
  }
  path.push('f*');
  return path.join('\n');
}
