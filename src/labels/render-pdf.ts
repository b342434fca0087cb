import {
  appendBezierCurve,
  closePath,
  lineTo,
  moveTo,
  PDFDocument,
  type PDFFont,
  PDFOperator,
  PDFOperatorNames,
  type PDFPage,
  popGraphicsState,
  pushGraphicsState,
  rectangle,
  rgb,
  StandardFonts,
  setFillingGrayscaleColor,
} from 'pdf-lib';
import {
  type BarcodeShape,
  type BoxItem,
  barcodeShapes,
  type LabelDocument,
  layoutLabel,
  PAGE_SIZES,
  POINTS_PER_DOT,
  SAMPLE_MARK,
  type TextItem,
} from './label-document.js';

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
    else drawShapes(page, await barcodeShapes(item));
  }
  return pdf.save();
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
 * ring's inner circle is its hole). Raw operators rather than drawSvgPath: parsing a path of a few
 * hundred cells as SVG took longer than the rest of the label.
 */
function drawShapes(page: PDFPage, shapes: readonly BarcodeShape[]): void {
  const height = page.getHeight();
  const x = (dots: number) => pt(dots);
  const y = (dots: number) => height - pt(dots);
  const operators: PDFOperator[] = [pushGraphicsState(), setFillingGrayscaleColor(0)];
  for (const shape of shapes) {
    if (shape.kind === 'rect') {
      operators.push(rectangle(x(shape.x), y(shape.y + shape.height), pt(shape.width), pt(shape.height)));
    } else if (shape.kind === 'polygon') {
      shape.points.forEach(([px, py], index) => {
        operators.push(index === 0 ? moveTo(x(px), y(py)) : lineTo(x(px), y(py)));
      });
      operators.push(closePath());
    } else {
      for (const radius of shape.inner > 0 ? [shape.outer, shape.inner] : [shape.outer]) {
        const [cx, cy, r] = [x(shape.cx), y(shape.cy), pt(radius)];
        const k = r * KAPPA;
        operators.push(
          moveTo(cx + r, cy),
          appendBezierCurve(cx + r, cy + k, cx + k, cy + r, cx, cy + r),
          appendBezierCurve(cx - k, cy + r, cx - r, cy + k, cx - r, cy),
          appendBezierCurve(cx - r, cy - k, cx - k, cy - r, cx, cy - r),
          appendBezierCurve(cx + k, cy - r, cx + r, cy - k, cx + r, cy),
          closePath(),
        );
      }
    }
  }
  operators.push(PDFOperator.of(PDFOperatorNames.FillEvenOdd), popGraphicsState());
  page.pushOperators(...operators);
}
