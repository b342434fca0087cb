/**
 * A DataMatrix (ECC 200, ISO/IEC 16022) encoder for the labels' 2D symbols, in ASCII encodation and
 * square sizes only. It exists for speed: bwip-js runs BWIPP's PostScript translated to JavaScript and
 * takes ~1.5 ms to encode a USPS label's symbol, most of a USPS PDF render; this takes ~0.04 ms for
 * the same text. zxing-wasm's writer (~0.7 ms) was not clearly better.
 *
 * The labels' payloads are printable ASCII (document.ts `plainAscii`), so the other encodations
 * (C40, Text, X12, EDIFACT, Base 256) and the upper shift are left out: anything else throws, and the
 * caller falls back to bwip-js. Without C40 and Text a symbol is at times one size larger than
 * bwip-js's (36x36 where it draws 32x32, 40x40 for 36x36); the labels' longest payloads still take
 * 40x40 at most, which fits their box.
 */

/** A symbol's modules, row by row from the top left, 1 for dark. */
export interface DataMatrixSymbol {
  size: number;
  dark: Uint8Array;
}

/** A square ECC 200 size: its side, its data region's side, regions per side, codewords and blocks. */
interface SymbolSize {
  size: number;
  region: number;
  regions: number;
  data: number;
  ecc: number;
  blocks: number;
}

// ISO/IEC 16022 table 7, square symbols: [size, data region size, regions per side, data codewords,
// error correction codewords, interleaved blocks].
const SIZES: readonly SymbolSize[] = (
  [
    [10, 8, 1, 3, 5, 1],
    [12, 10, 1, 5, 7, 1],
    [14, 12, 1, 8, 10, 1],
    [16, 14, 1, 12, 12, 1],
    [18, 16, 1, 18, 14, 1],
    [20, 18, 1, 22, 18, 1],
    [22, 20, 1, 30, 20, 1],
    [24, 22, 1, 36, 24, 1],
    [26, 24, 1, 44, 28, 1],
    [32, 14, 2, 62, 36, 1],
    [36, 16, 2, 86, 42, 1],
    [40, 18, 2, 114, 48, 1],
    [44, 20, 2, 144, 56, 1],
    [48, 22, 2, 174, 68, 1],
    [52, 24, 2, 204, 84, 2],
    [64, 14, 4, 280, 112, 2],
    [72, 16, 4, 368, 144, 4],
    [80, 18, 4, 456, 192, 4],
    [88, 20, 4, 576, 224, 4],
    [96, 22, 4, 696, 272, 4],
    [104, 24, 4, 816, 336, 6],
    [120, 18, 6, 1050, 408, 6],
    [132, 20, 6, 1304, 496, 8],
    // 144x144 interleaves 8 blocks of 156 data codewords and 2 of 155, each with 62 ECC codewords:
    // taking every tenth codeword, as below, splits them so.
    [144, 22, 6, 1558, 620, 10],
  ] as const
).map(([size, region, regions, data, ecc, blocks]) => ({ size, region, regions, data, ecc, blocks }));

/** Encodes printable ASCII text in the smallest square symbol that holds it. */
export function encodeDataMatrix(text: string): DataMatrixSymbol {
  const codewords = asciiCodewords(text);
  const size = SIZES.find((candidate) => candidate.data >= codewords.length);
  if (!size) throw new RangeError(`DataMatrix: ${codewords.length} codewords do not fit a square symbol`);
  const all = new Uint8Array(size.data + size.ecc);
  all.set(codewords);
  pad(all, codewords.length, size.data);
  addErrorCorrection(all, size);
  return drawSymbol(all, size);
}

/** ASCII encodation: a pair of digits in one codeword (130 + their value), any other character + 1. */
function asciiCodewords(text: string): number[] {
  const codewords: number[] = [];
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code < 0x20 || code > 0x7e) throw new RangeError('DataMatrix: only printable ASCII is encoded here');
    const next = text.charCodeAt(at + 1);
    if (isDigit(code) && isDigit(next)) {
      codewords.push(130 + (code - 48) * 10 + (next - 48));
      at++;
    } else {
      codewords.push(code + 1);
    }
  }
  return codewords;
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/** The first pad is 129; the rest are scrambled by their position (the 253-state algorithm, 5.2.3). */
function pad(codewords: Uint8Array, from: number, to: number): void {
  for (let at = from; at < to; at++) {
    if (at === from) {
      codewords[at] = 129;
      continue;
    }
    const scrambled = 129 + (((149 * (at + 1)) % 253) + 1);
    codewords[at] = scrambled <= 254 ? scrambled : scrambled - 254;
  }
}

// GF(256) over the polynomial x^8 + x^5 + x^3 + x^2 + 1 (0x12D): powers of alpha and their logs.
const EXP = new Uint8Array(510);
const LOG = new Uint8Array(256);
for (let power = 0, value = 1; power < 255; power++) {
  EXP[power] = EXP[power + 255] = value;
  LOG[value] = power;
  value <<= 1;
  if (value & 0x100) value ^= 0x12d;
}

function multiply(a: number, b: number): number {
  return a === 0 || b === 0 ? 0 : (EXP[(LOG[a] as number) + (LOG[b] as number)] as number);
}

/** Generator polynomials by degree, with roots alpha^1 .. alpha^n; coefficients from x^(n-1) down. */
const generators = new Map<number, Uint8Array>();
function generator(degree: number): Uint8Array {
  let poly = generators.get(degree);
  if (poly) return poly;
  // Coefficients from the highest power down, the leading 1 included while building.
  let product = [1];
  for (let root = 1; root <= degree; root++) {
    const next = new Array<number>(product.length + 1).fill(0);
    const alpha = EXP[root] as number;
    product.forEach((coefficient, index) => {
      next[index] = (next[index] as number) ^ coefficient;
      next[index + 1] = (next[index + 1] as number) ^ multiply(coefficient, alpha);
    });
    product = next;
  }
  poly = Uint8Array.from(product.slice(1));
  generators.set(degree, poly);
  return poly;
}

/**
 * Reed-Solomon error correction, per interleaved block: block b holds codewords b, b + blocks, ...
 * of the data, and its ECC codewords go to the same places after the data.
 */
function addErrorCorrection(codewords: Uint8Array, size: SymbolSize): void {
  const eccPerBlock = size.ecc / size.blocks;
  const poly = generator(eccPerBlock);
  const remainder = new Uint8Array(eccPerBlock);
  for (let block = 0; block < size.blocks; block++) {
    remainder.fill(0);
    for (let at = block; at < size.data; at += size.blocks) {
      const factor = (codewords[at] as number) ^ (remainder[0] as number);
      remainder.copyWithin(0, 1);
      remainder[eccPerBlock - 1] = 0;
      if (factor === 0) continue;
      for (let index = 0; index < eccPerBlock; index++)
        remainder[index] = (remainder[index] as number) ^ multiply(poly[index] as number, factor);
    }
    // 144x144 starts its ECC interleave at block 8, the first of its shorter blocks (as ZXing
    // reads it and bwip-js writes it).
    const slot = size.size === 144 ? (block + 2) % size.blocks : block;
    for (let index = 0; index < eccPerBlock; index++)
      codewords[size.data + slot + index * size.blocks] = remainder[index] as number;
  }
}

/**
 * The module placement of annex F: each codeword's 8 bits go in a "utah" shape, moved diagonally
 * across the mapping matrix (the data regions side by side, without their patterns), with four
 * special shapes for the corners. Each cell gets codeword * 8 + bit, bit 0 the most significant.
 */
function placement(rows: number, columns: number): Int32Array {
  const cells = new Int32Array(rows * columns).fill(-1);
  const place = (row: number, column: number, codeword: number, bit: number) => {
    let r = row;
    let c = column;
    if (r < 0) {
      r += rows;
      c += 4 - ((rows + 4) % 8);
    }
    if (c < 0) {
      c += columns;
      r += 4 - ((columns + 4) % 8);
    }
    cells[r * columns + c] = codeword * 8 + bit;
  };
  const shape = (codeword: number, modules: ReadonlyArray<readonly [number, number]>) => {
    modules.forEach(([row, column], bit) => {
      place(row, column, codeword, bit);
    });
  };
  const utah = (row: number, column: number, codeword: number) =>
    shape(codeword, [
      [row - 2, column - 2],
      [row - 2, column - 1],
      [row - 1, column - 2],
      [row - 1, column - 1],
      [row - 1, column],
      [row, column - 2],
      [row, column - 1],
      [row, column],
    ]);
  const [lastRow, lastColumn] = [rows - 1, columns - 1];
  const corners = [
    [
      [lastRow, 0],
      [lastRow, 1],
      [lastRow, 2],
      [0, lastColumn - 1],
      [0, lastColumn],
      [1, lastColumn],
      [2, lastColumn],
      [3, lastColumn],
    ],
    [
      [lastRow - 2, 0],
      [lastRow - 1, 0],
      [lastRow, 0],
      [0, lastColumn - 3],
      [0, lastColumn - 2],
      [0, lastColumn - 1],
      [0, lastColumn],
      [1, lastColumn],
    ],
    [
      [lastRow - 2, 0],
      [lastRow - 1, 0],
      [lastRow, 0],
      [0, lastColumn - 1],
      [0, lastColumn],
      [1, lastColumn],
      [2, lastColumn],
      [3, lastColumn],
    ],
    [
      [lastRow, 0],
      [lastRow, lastColumn],
      [0, lastColumn - 2],
      [0, lastColumn - 1],
      [0, lastColumn],
      [1, lastColumn - 2],
      [1, lastColumn - 1],
      [1, lastColumn],
    ],
  ] as const;

  let codeword = 0;
  let row = 4;
  let column = 0;
  do {
    if (row === rows && column === 0) shape(codeword++, corners[0]);
    if (row === rows - 2 && column === 0 && columns % 4 !== 0) shape(codeword++, corners[1]);
    if (row === rows - 2 && column === 0 && columns % 8 === 4) shape(codeword++, corners[2]);
    if (row === rows + 4 && column === 2 && columns % 8 === 0) shape(codeword++, corners[3]);
    // Up and to the right, then down and to the left, skipping cells a corner already took.
    do {
      if (row < rows && column >= 0 && cells[row * columns + column] === -1) utah(row, column, codeword++);
      row -= 2;
      column += 2;
    } while (row >= 0 && column < columns);
    row += 1;
    column += 3;
    do {
      if (row >= 0 && column < columns && cells[row * columns + column] === -1) utah(row, column, codeword++);
      row += 2;
      column -= 2;
    } while (row < rows && column >= 0);
    row += 3;
    column += 1;
  } while (row < rows || column < columns);
  return cells;
}

/** Mapping matrices by symbol size: the placement depends on the size alone. */
const placements = new Map<number, Int32Array>();

/** Codewords into modules, and the finder and timing patterns around each data region. */
function drawSymbol(codewords: Uint8Array, size: SymbolSize): DataMatrixSymbol {
  const side = size.region * size.regions;
  let cells = placements.get(size.size);
  if (!cells) {
    cells = placement(side, side);
    placements.set(size.size, cells);
  }
  const block = size.region + 2;
  const dark = new Uint8Array(size.size * size.size);
  for (let y = 0; y < size.size; y++) {
    const inY = y % block;
    for (let x = 0; x < size.size; x++) {
      const inX = x % block;
      let on: boolean;
      if (inX === 0 || inY === block - 1)
        on = true; // the solid L of the finder
      else if (inY === 0)
        on = inX % 2 === 0; // the timing patterns, alternating
      else if (inX === block - 1) on = inY % 2 === 1;
      else {
        const row = Math.floor(y / block) * size.region + inY - 1;
        const column = Math.floor(x / block) * size.region + inX - 1;
        const cell = cells[row * side + column] as number;
        // Cells no codeword reached are the bottom right 2x2 of some sizes: dark on its diagonal.
        on =
          cell >= 0
            ? (((codewords[cell >> 3] as number) >> (7 - (cell & 7))) & 1) === 1
            : (row === side - 1 && column === side - 1) || (row === side - 2 && column === side - 2);
      }
      dark[y * size.size + x] = on ? 1 : 0;
    }
  }
  return { size: size.size, dark };
}
