import { deflateSync } from 'node:zlib';
import {
  cleanText,
  lineSplit,
  numberToString,
  PDFArray,
  PDFDocument,
  type PDFFont,
  type PDFPage,
  PDFRef,
  StandardFonts,
} from 'pdf-lib';
import { type BarcodeShape, barcodeShapes } from './barcodes.js';
import { type LabelDocument, PAGE_SIZES, POINTS_PER_DOT, SAMPLE_MARK } from './document.js';
import { type BoxItem, layoutLabel, type TextItem } from './layout.js';

/**
 * A one-page PDF of the page size the label asks for. Text is in Helvetica, one of the PDF standard
 * fonts that every reader has: nothing is embedded, so a label renders in a few milliseconds (embedding
 * and subsetting a TrueType font took over 100 ms) and stays small.
 */
export async function renderPdf(doc: LabelDocument): Promise<Uint8Array> {
  const layout = layoutLabel(doc);
  const geometry = PAGE_SIZES[doc.size];
  // pdf-lib stamps the current time unless told not to; the label's own time keeps the bytes the same.
  const pdf = await PDFDocument.create({ updateMetadata: false });
  const created = new Date(doc.createdAt);
  pdf.setTitle(`${doc.carrier.name} label ${doc.trackingNumber}`);
  pdf.setSubject(SAMPLE_MARK);
  pdf.setCreator('Shipping Sandbox');
  pdf.setProducer('Shipping Sandbox');
  pdf.setCreationDate(created);
  pdf.setModificationDate(created);

  const page = pdf.addPage([geometry.widthPt, geometry.heightPt]);
  const fonts: Fonts = {
    regular: await pdf.embedFont(StandardFonts.Helvetica),
    bold: await pdf.embedFont(StandardFonts.HelveticaBold),
  };
  const content = new PageContent(page);
  for (const item of layout.items) {
    if (item.kind === 'text') drawText(content, fonts, item);
    else if (item.kind === 'box') drawBox(content, item);
    else drawShapes(pdf, content, await barcodeShapes(item));
  }
  content.store(pdf);
  return pdf.save();
}

/**
 * The page's content stream, written as text: the operators, numbers and resource names are those
 * that pdf-lib's `drawText` and `drawRectangle` write, so the file is byte for byte what those made,
 * but without the operator objects they build and serialise, a fifth of a render.
 */
class PageContent {
  private text = '';
  private readonly ref: PDFRef;
  readonly height: number;

  constructor(readonly page: PDFPage) {
    // pdf-lib registers a page's content stream on its first drawing; here too, so that every object
    // keeps its number (after the fonts, before the barcodes' forms).
    page.pushOperators();
    const contents = page.node.Contents();
    const ref = contents instanceof PDFArray ? contents.get(contents.size() - 1) : contents;
    if (!(ref instanceof PDFRef)) throw new Error('the page has no content stream');
    this.ref = ref;
    this.height = page.getHeight();
  }

  /** Operators, one a line. */
  write(...operators: string[]): void {
    for (const operator of operators) this.text += `${operator}\n`;
  }

  /**
   * Stores the content in place of the stream pdf-lib registered, compressed by Node's zlib (pdf-lib's
   * own deflate, in JavaScript, is several times slower).
   */
  store(pdf: PDFDocument): void {
    const compressed = deflateSync(Buffer.from(this.text, 'latin1'));
    pdf.context.assign(this.ref, pdf.context.stream(compressed, { Filter: 'FlateDecode' }));
  }
}

interface Fonts {
  regular: PDFFont;
  bold: PDFFont;
}

const pt = (dots: number) => dots * POINTS_PER_DOT;
/** A number as pdf-lib writes it in a content stream. */
const num = numberToString;
/** What pdf-lib's `rotate`, `xSkew` and `ySkew` of 0 write as their matrices. */
const IDENTITY = '1 0 0 1 0 0 cm';

/** As `page.drawText(text, { x, y, size, font, color })`: black, or white on a black box. */
function drawText(content: PageContent, fonts: Fonts, item: TextItem): void {
  const font = item.bold ? fonts.bold : fonts.regular;
  const text = winAnsi(font, item.text);
  const size = pt(item.size);
  const width = font.widthOfTextAtSize(text, size);
  const left = item.align === 'center' ? pt(item.x) + (pt(item.width) - width) / 2 : pt(item.x);
  // drawText names the font anew in the page's resources for every text, and so must this.
  const key = content.page.node.newFontDictionary(font.name, font.ref);
  content.write(
    'q',
    'BT',
    item.inverse ? '1 1 1 rg' : '0 0 0 rg',
    `${key} ${num(size)} Tf`,
    '24 TL',
    `1 0 0 1 ${num(left)} ${num(content.height - pt(item.baseline))} Tm`,
  );
  for (const line of lineSplit(cleanText(text))) content.write(`${font.encodeText(line)} Tj`, 'T*');
  content.write('ET', 'Q');
}

let encodable: Set<number> | undefined;

/**
 * The standard fonts cover WinAnsi (Western European) only, and pdf-lib throws on anything else:
 * accents outside it are dropped, other characters become `?`.
 */
function winAnsi(font: PDFFont, text: string): string {
  encodable ??= new Set(font.getCharacterSet());
  const supported = encodable;
  let out = '';
  for (const char of text) {
    if (supported.has(char.codePointAt(0) ?? 0)) {
      out += char;
      continue;
    }
    const base = char.normalize('NFD').replace(/\p{M}/gu, '');
    out += [...base].every((c) => supported.has(c.codePointAt(0) ?? 0)) && base ? base : '?';
  }
  return out;
}

function drawBox(content: PageContent, item: BoxItem): void {
  // As `page.drawRectangle({ x, y, width, height, color: black })`.
  const fill = (x: number, y: number, width: number, height: number) => {
    const [w, h] = [num(pt(width)), num(pt(height))];
    content.write(
      'q',
      '0 0 0 rg',
      '0 w',
      '[] 0 d',
      `1 0 0 1 ${num(pt(x))} ${num(content.height - pt(y + height))} cm`,
      IDENTITY,
      IDENTITY,
      '0 0 m',
      `0 ${h} l`,
      `${w} ${h} l`,
      `${w} 0 l`,
      'h',
      'f',
      'Q',
    );
  };
  const t = item.thickness;
  if (t === null || 2 * t >= Math.min(item.width, item.height)) {
    fill(item.x, item.y, item.width, item.height);
    return;
  }
  fill(item.x, item.y, item.width, t);
  fill(item.x, item.y + item.height - t, item.width, t);
  fill(item.x, item.y + t, t, item.height - 2 * t);
  fill(item.x + item.width - t, item.y + t, t, item.height - 2 * t);
}

// Four Bézier arcs make a circle to within 0.03%.
const KAPPA = 0.5522847498;

/**
 * All of a barcode's shapes as one path filled with the even-odd rule (they never overlap, and a
 * ring's inner circle is its hole), written as a form XObject's content directly. A MaxiCode is a few
 * thousand path operators, and building them as pdf-lib operator objects (or parsing them with
 * drawSvgPath) took longer than the rest of the label.
 */
function drawShapes(pdf: PDFDocument, content: PageContent, shapes: readonly BarcodeShape[]): void {
  const { page, height } = content;
  const n = (value: number) => String(Math.round(value * 1000) / 1000);
  const x = (dots: number) => n(pt(dots));
  const y = (dots: number) => n(height - pt(dots));
  const path: string[] = ['0 g'];
  for (const shape of shapes) {
    if (shape.kind === 'rect') {
      path.push(`${x(shape.x)} ${y(shape.y + shape.height)} ${n(pt(shape.width))} ${n(pt(shape.height))} re`);
    } else if (shape.kind === 'polygon') {
      shape.points.forEach(([px, py], index) => {
        path.push(`${x(px)} ${y(py)} ${index === 0 ? 'm' : 'l'}`);
      });
      path.push('h');
    } else {
      for (const radius of shape.inner > 0 ? [shape.outer, shape.inner] : [shape.outer]) {
        const [cx, cy, r] = [pt(shape.cx), height - pt(shape.cy), pt(radius)];
        const k = r * KAPPA;
        path.push(
          `${n(cx + r)} ${n(cy)} m`,
          `${n(cx + r)} ${n(cy + k)} ${n(cx + k)} ${n(cy + r)} ${n(cx)} ${n(cy + r)} c`,
          `${n(cx - k)} ${n(cy + r)} ${n(cx - r)} ${n(cy + k)} ${n(cx - r)} ${n(cy)} c`,
          `${n(cx - r)} ${n(cy - k)} ${n(cx - k)} ${n(cy - r)} ${n(cx)} ${n(cy - r)} c`,
          `${n(cx + k)} ${n(cy - r)} ${n(cx + r)} ${n(cy - k)} ${n(cx + r)} ${n(cy)} c`,
          'h',
        );
      }
    }
  }
  path.push('f*');
  // Compressed by Node's zlib: pdf-lib's own deflate (pako, in JavaScript) took a fifth of a label.
  const form = pdf.context.stream(deflateSync(path.join('\n')), {
    Type: 'XObject',
    Subtype: 'Form',
    BBox: [0, 0, page.getWidth(), height],
    Filter: 'FlateDecode',
  });
  const name = page.node.newXObject('Barcode', pdf.context.register(form));
  content.write('q', `${name} Do`, 'Q');
}
