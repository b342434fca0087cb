/**
 * Measuring text and fitting it to a span, so that the layout can settle every text's size and cut
 * once, for all three formats.
 */

// Helvetica's advance widths (per 1000 em) for ASCII 32..126. The PDF prints in Helvetica and the PNG
// in Arimo, which has Helvetica's metrics, so fitting text with these is exact in both; ZPL's font 0
// is condensed and only ever narrower.
const HELVETICA = [
  278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556,
  556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278,
  500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469,
  556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500,
  278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
];
const HELVETICA_BOLD = [
  278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556,
  556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611, 975, 722, 722, 722, 722, 667, 611, 778, 722, 278,
  556, 722, 611, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 333, 278, 333, 584,
  556, 333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556, 278, 889, 611, 611, 611, 611, 389, 556,
  333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584,
];
// Letters outside ASCII that have no ASCII base letter (Cyrillic, Greek, ...) are measured as a wide one.
const OTHER_WIDTH = 722;

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

export function textWidth(text: string, size: number, bold: boolean): number {
  const widths = bold ? HELVETICA_BOLD : HELVETICA;
  let units = 0;
  // Most texts are plain ASCII, which has no marks to drop: measured without decomposing them.
  if (PRINTABLE_ASCII.test(text)) {
    for (let index = 0; index < text.length; index++) units += widths[text.charCodeAt(index) - 32] ?? 0;
    return (units * size) / 1000;
  }
  for (const char of text.normalize('NFD')) {
    const code = char.codePointAt(0) ?? 0;
    if (/\p{M}/u.test(char)) continue;
    units += (code >= 32 && code <= 126 ? widths[code - 32] : undefined) ?? OTHER_WIDTH;
  }
  return (units * size) / 1000;
}

/** Shrinks text down to `minScale` of its size to fit, then cuts it with an ellipsis. */
export function fitText(
  text: string,
  size: number,
  bold: boolean,
  width: number,
  minScale: number,
): { text: string; size: number } {
  const natural = textWidth(text, size, bold);
  if (natural <= width) return { text, size };
  const smaller = Math.max(Math.ceil(size * minScale), Math.floor((size * width) / natural));
  if (textWidth(text, smaller, bold) <= width) return { text, size: smaller };
  // The longest start that fits with its ellipsis (at least one character). A longer start is never
  // narrower, so a binary search finds it: a hundred characters of another script are measured a few
  // times, not a hundred.
  const chars = [...text];
  const cut = (length: number) => `${chars.slice(0, length).join('').trimEnd()}...`;
  let fits = 1;
  let tooLong = chars.length;
  while (tooLong - fits > 1) {
    const middle = (fits + tooLong) >>> 1;
    if (textWidth(cut(middle), smaller, bold) <= width) fits = middle;
    else tooLong = middle;
  }
  return { text: cut(fits), size: smaller };
}
