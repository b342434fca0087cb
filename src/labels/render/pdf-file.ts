import { deflateSync } from 'node:zlib';

/**
 * A one-page PDF file written directly: the catalog, the page, its standard fonts and forms, the
 * content, the document information, and a cross-reference table of their offsets. A label is always
 * this same handful of objects, and only its streams and strings change; building it as a pdf-lib
 * document (an object graph, serialised into object streams that pako compresses) took most of a
 * render that was not the barcodes.
 *
 * Streams are compressed by Node's zlib; dictionaries stay plain text (a few hundred bytes, which an
 * object stream would compress at the cost of a second pass through zlib, or pako's, for every label).
 */

export interface PdfPage {
  widthPt: number;
  heightPt: number;
  /** The page's content stream: operators, one a line. */
  content: string;
  /** Resource name to standard font (`Helvetica`), in WinAnsi encoding. */
  fonts: Readonly<Record<string, string>>;
  /**
   * Resource name to a form XObject's content. A form is painted in the coordinates of the content
   * that paints it, and covers the page: `formBox` is the page's width and height in those.
   */
  forms: Readonly<Record<string, string>>;
  formBox: readonly [number, number];
  info: DocumentInfo;
}

export interface DocumentInfo {
  title: string;
  subject: string;
  /** The application that made the document; also its producer. */
  creator: string;
  /** Milliseconds since the epoch: the creation and modification date. */
  created: number;
}

/**
 * zlib's level for the streams. A MaxiCode's path is 40 KB of text: level 4 compresses it to the
 * size level 6 does in under half the time (0.4 ms against 1 ms); the other streams, a few KB each,
 * take about 0.03 ms at either.
 */
const STREAM_LEVEL = 4;

/** The header, with a comment of bytes above 127 that tells transfer programs the file is binary. */
const HEADER = '%PDF-1.7\n%\x81\x81\x81\x81\n';

export function pdfFile(page: PdfPage): Uint8Array {
  const parts: Array<string | Buffer> = [HEADER];
  const offsets: number[] = [];
  let size = HEADER.length;
  const add = (...chunks: Array<string | Buffer>) => {
    offsets.push(size);
    for (const chunk of chunks) {
      parts.push(chunk);
      size += chunk.length;
    }
  };
  const object = (number: number, body: string) => add(`${number} 0 obj\n${body}\nendobj\n`);
  const stream = (number: number, dictionary: string, text: string) => {
    const data = deflateSync(Buffer.from(text, 'latin1'), { level: STREAM_LEVEL });
    add(
      `${number} 0 obj\n<< ${dictionary}/Filter /FlateDecode /Length ${data.length} >>\nstream\n`,
      data,
      '\nendstream\nendobj\n',
    );
  };

  // Numbered in the order they are written: catalog, pages, page, fonts, content, forms, information.
  const fonts = Object.entries(page.fonts);
  const forms = Object.entries(page.forms);
  const fontRef = (index: number) => 4 + index;
  const contentRef = 4 + fonts.length;
  const formRef = (index: number) => contentRef + 1 + index;
  const infoRef = formRef(forms.length);
  const mediaBox = `[0 0 ${page.widthPt} ${page.heightPt}]`;
  const formBox = `[0 0 ${page.formBox.join(' ')}]`;
  const resources = (entries: Array<[string, unknown]>, ref: (index: number) => number) =>
    entries.map(([name], index) => `/${name} ${ref(index)} 0 R`).join(' ');

  object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  object(2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
  object(
    3,
    `<< /Type /Page /Parent 2 0 R /MediaBox ${mediaBox} /Resources << /Font << ${resources(fonts, fontRef)} >> ` +
      `/XObject << ${resources(forms, formRef)} >> >> /Contents ${contentRef} 0 R >>`,
  );
  fonts.forEach(([, base], index) => {
    object(fontRef(index), `<< /Type /Font /Subtype /Type1 /BaseFont /${base} /Encoding /WinAnsiEncoding >>`);
  });
  stream(contentRef, '', page.content);
  forms.forEach(([, content], index) => {
    stream(formRef(index), `/Type /XObject /Subtype /Form /BBox ${formBox} `, content);
  });
  const { title, subject, creator, created } = page.info;
  const date = pdfDate(created);
  object(
    infoRef,
    `<< /Title ${pdfString(title)} /Subject ${pdfString(subject)} /Creator ${pdfString(creator)} ` +
      `/Producer ${pdfString(creator)} /CreationDate ${date} /ModDate ${date} >>`,
  );

  const count = infoRef + 1;
  const xref = size;
  const entries = offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('');
  parts.push(
    `xref\n0 ${count}\n0000000000 65535 f \n${entries}`,
    `trailer\n<< /Size ${count} /Root 1 0 R /Info ${infoRef} 0 R >>\nstartxref\n${xref}\n%%EOF\n`,
  );
  return Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'latin1') : part)));
}

/**
 * A text string: literal when it is printable ASCII (with its delimiters escaped), else UTF-16 with
 * its byte order mark, in hex, as the PDF reference asks of text outside PDFDocEncoding's ASCII.
 */
export function pdfString(text: string): string {
  if (/^[\x20-\x7e]*$/.test(text)) return `(${text.replace(/[\\()]/g, '\\$&')})`;
  let hex = 'FEFF';
  for (let index = 0; index < text.length; index++)
    hex += text.charCodeAt(index).toString(16).toUpperCase().padStart(4, '0');
  return `<${hex}>`;
}

/** `(D:YYYYMMDDHHmmSSZ)`, in UTC. */
export function pdfDate(ms: number): string {
  return `(D:${new Date(ms)
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:T]/g, '')})`;
}
