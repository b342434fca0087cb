import { createRequire } from 'node:module';
import { encodeDataMatrix } from './datamatrix.js';
import { type BarcodeItem, PDF417 } from './layout.js';

/**
 * Barcodes as shapes, for the PDF and PNG renderers (ZPL printers draw their own): bwip-js encodes the
 * layout's barcode items (datamatrix.ts its DataMatrix symbols), and their bars, cells and MaxiCode
 * hexagons are placed here in page dots.
 */

/** What is used of bwip-js: encoding a symbol without drawing it. */
interface Bwip {
  raw(symbology: string, text: string, options: string): unknown[];
}
let bwip: Bwip | undefined;

/**
 * bwip-js is loaded on the first barcode, by `require`: its CommonJS build exports the raw-data
 * function as `raw` (its ES build names the "raw" symbology so), and the bundled server has no
 * dynamic `import()` to offer.
 */
async function loadBwip(): Promise<Bwip> {
  bwip ??= createRequire(import.meta.url)('bwip-js') as Bwip;
  return bwip;
}

/**
 * A barcode's dark parts in page dots. None overlap, and a ring is a disc with a hole, so every
 * renderer can fill them all at once with the even-odd rule (or paint them one by one).
 */
export type BarcodeShape =
  | { kind: 'rect'; x: number; y: number; width: number; height: number }
  | { kind: 'polygon'; points: Array<[number, number]> }
  | { kind: 'ring'; cx: number; cy: number; outer: number; inner: number };

/** Bars and cells come out on whole dots, so that a 203-dpi raster of them is crisp. */
export async function barcodeShapes(item: BarcodeItem): Promise<BarcodeShape[]> {
  const bwipjs = await loadBwip();
  switch (item.symbology) {
    case 'code128': {
      const [symbol] = bwipjs.raw('code128', item.data, '');
      const widths = (symbol as { sbs?: number[] } | undefined)?.sbs ?? [];
      const total = widths.reduce((sum, width) => sum + width, 0) * item.module;
      let x = item.x + Math.max(0, Math.floor((item.width - total) / 2));
      const shapes: BarcodeShape[] = [];
      widths.forEach((width, index) => {
        if (index % 2 === 0)
          shapes.push({ kind: 'rect', x, y: item.y, width: width * item.module, height: item.height });
        x += width * item.module;
      });
      return shapes;
    }
    case 'pdf417':
    case 'datamatrix': {
      const { pixs, pixx, pixy } = matrixSymbol(bwipjs, item);
      const rows = pixx > 0 ? pixs.length / pixx : 0;
      // PDF417 rows are several modules tall; bwip-js reports the symbol's full height in pixy.
      const cellHeight = rows > 0 ? (pixy / rows) * item.module : 0;
      const shapes: BarcodeShape[] = [];
      for (let row = 0; row < rows; row++) {
        // One rectangle per run of dark cells: fewer shapes, and no seams between neighbours.
        let runStart = -1;
        for (let column = 0; column <= pixx; column++) {
          const dark = column < pixx && pixs[row * pixx + column] === 1;
          if (dark && runStart < 0) runStart = column;
          if (!dark && runStart >= 0) {
            shapes.push({
              kind: 'rect',
              x: item.x + runStart * item.module,
              y: item.y + row * cellHeight,
              width: (column - runStart) * item.module,
              height: cellHeight,
            });
            runStart = -1;
          }
        }
      }
      return shapes;
    }
    case 'maxicode':
      return maxiCodeShapes(bwipjs, item);
  }
}

/** A matrix symbol's modules, row by row, and its width and height (PDF417's in row modules). */
interface MatrixSymbol {
  pixs: ArrayLike<number>;
  pixx: number;
  pixy: number;
}

/**
 * DataMatrix symbols come from datamatrix.ts, many times faster than bwip-js; bwip-js draws them
 * still when that encoder declines the text, or when its ASCII-only symbol would not fit the box
 * where bwip-js's other encodations might.
 */
function matrixSymbol(bwipjs: Bwip, item: BarcodeItem): MatrixSymbol {
  if (item.symbology === 'datamatrix') {
    try {
      const { size, dark } = encodeDataMatrix(item.data);
      if (size * item.module <= Math.min(item.width, item.height))
        return { pixs: dark, pixx: size, pixy: size };
    } catch {
      // Not printable ASCII, or too long for any square symbol: bwip-js has the other encodations.
    }
  }
  const options =
    item.symbology === 'pdf417'
      ? `columns=${PDF417.columns} eclevel=${PDF417.securityLevel} rowmult=${PDF417.rowModules}`
      : '';
  const [symbol] = bwipjs.raw(item.symbology, item.data, options);
  const { pixs = [], pixx = 0, pixy = 0 } = (symbol ?? {}) as Partial<MatrixSymbol>;
  return { pixs, pixx, pixy };
}

// MaxiCode geometry (ISO/IEC 16023) in module widths: 33 rows of 30 hexagons with vertical sides,
// odd rows shifted half a module right, rows √3/2 apart, and a bullseye of three rings in the middle.
const HEX_HEIGHT = 2 / Math.sqrt(3);
const ROW_PITCH = Math.sqrt(3) / 2;
const HEX_INK = 0.88;
const MAXICODE_WIDTH = 30.5;
const MAXICODE_HEIGHT = 32 * ROW_PITCH + HEX_HEIGHT;
const BULLSEYE: ReadonlyArray<readonly [number, number]> = [
  [1, 0.5],
  [2.5, 1.75],
  [3.75, 3],
];

/**
 * bwip-js encodes the symbol; its modules are placed here on the standard grid. (bwip-js's own
 * drawing squeezes the rows closer, and a decoder that samples the standard grid misreads it.)
 */
function maxiCodeShapes(bwipjs: Bwip, item: BarcodeItem): BarcodeShape[] {
  const [symbol] = bwipjs.raw('maxicode', item.data, `mode=${item.maxicode?.mode ?? 4}`);
  const dark = (symbol as { pixs?: number[] } | undefined)?.pixs ?? [];
  const scale = Math.min(item.width / MAXICODE_WIDTH, item.height / MAXICODE_HEIGHT);
  const round = (value: number) => Math.round(value * 100) / 100;
  const at = (x: number, y: number): [number, number] => [
    round(item.x + x * scale),
    round(item.y + y * scale),
  ];
  const shapes: BarcodeShape[] = dark.map((index) => {
    const row = Math.floor(index / 30);
    const cx = (index % 30) + 0.5 + (row % 2) * 0.5;
    const cy = row * ROW_PITCH + HEX_HEIGHT / 2;
    // Printed hexagons are a little smaller than the grid, leaving the gaps a MaxiCode shows.
    const [w2, h2, h4] = [HEX_INK / 2, (HEX_INK * HEX_HEIGHT) / 2, (HEX_INK * HEX_HEIGHT) / 4];
    return {
      kind: 'polygon',
      points: [
        at(cx, cy - h2),
        at(cx + w2, cy - h4),
        at(cx + w2, cy + h4),
        at(cx, cy + h2),
        at(cx - w2, cy + h4),
        at(cx - w2, cy - h4),
      ],
    };
  });
  const [cx, cy] = at(MAXICODE_WIDTH / 2, MAXICODE_HEIGHT / 2);
  for (const [outer, inner] of BULLSEYE) {
    shapes.push({ kind: 'ring', cx, cy, outer: round(outer * scale), inner: round(inner * scale) });
  }
  return shapes;
}
