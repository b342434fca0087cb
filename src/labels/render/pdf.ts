import { deflateSync } from 'node:zlib';
import {
  drawObject,
  PDFArray,
  PDFContentStream,
  PDFDocument,
  type PDFFont,
  PDFName,
  type PDFPage,
  PDFRef,
  popGraphicsState,
  pushGraphicsState,
  rgb,
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
  for (const item of layout.items) {
    if (item.kind === 'text') drawText(page, fonts, item);
    else if (item.kind === 'box') drawBox(page, item);
    else drawShapes(pdf, page, await barcodeShapes(item));
  }
  compressContentStreams(pdf, page);
  return pdf.save();
}

/**
 * pdf-lib compresses the page's own content streams with its JavaScript deflate when saving; Node's
 * zlib does the same work several times faster, so the streams are swapped for compressed copies.
 */
function compressContentStreams(pdf: PDFDocument, page: PDFPage): void {
  const contents = page.node.get(PDFName.of('Contents'));
  const refs = contents instanceof PDFArray ? contents.asArray() : [contents];
  for (const ref of refs) {
    if (!(ref instanceof PDFRef)) continue;
    const stream = pdf.context.lookup(ref);
    if (!(stream instanceof PDFContentStream)) continue;
    const compressed = pdf.context.stream(deflateSync(stream.getUnencodedContents()), {
      Filter: 'FlateDecode',
    });
    pdf.context.assign(ref, compressed);
  }
}

interface Fonts {
  regular: PDFFont;
  bold: PDFFont;
}

const BLACK = rgb(0, 0, 0);
const WHITE = rgb(1, 1, 1);
const pt = (dots: number) => dots * POINTS_PER_DOT;

function drawText(page: PDFPage, fonts: Fonts, item: TextItem): void {
  const font = item.bold ? fonts.bold : fonts.regular;
  const text = winAnsi(font, item.text);
  const size = pt(item.size);
  const width = font.widthOfTextAtSize(text, size);
  const left = item.align === 'center' ? pt(item.x) + (pt(item.width) - width) / 2 : pt(item.x);
  page.drawText(text, {
    x: left,
    y: page.getHeight() - pt(item.baseline),
    size,
    font,
    color: item.inverse ? WHITE : BLACK,
  });
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

function drawBox(page: PDFPage, item: BoxItem): void {
  const fill = (x: number, y: number, width: number, height: number) =>
    page.drawRectangle({
      x: pt(x),
      y: page.getHeight() - pt(y + height),
      width: pt(width),
      height: pt(height),
      color: BLACK,
    });
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
function drawShapes(pdf: PDFDocument, page: PDFPage, shapes: readonly BarcodeShape[]): void {
  const height = page.getHeight();
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
  page.pushOperators(pushGraphicsState(), drawObject(name), popGraphicsState());
}
