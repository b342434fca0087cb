import type { Answer } from './sandbox-api.js';

/**
 * What the control commands print. A person's terminal gets readable lines and small tables; a pipe
 * or a file gets the JSON the sandbox answered, so scripts can use `jq`. `--json` and `--pretty`
 * override the guess.
 */
export type OutputMode = 'json' | 'pretty';

export function outputMode(
  flags: { json?: boolean; pretty?: boolean },
  isTerminal = process.stdout.isTTY === true,
): OutputMode {
  if (flags.json) return 'json';
  if (flags.pretty) return 'pretty';
  return isTerminal ? 'pretty' : 'json';
}

export interface Writer {
  write(text: string): unknown;
}

export class Output {
  constructor(
    readonly mode: OutputMode,
    private readonly stdout: Writer = process.stdout,
  ) {}

  /** One answer: its JSON text as the sandbox sent it (one document), or its readable form. */
  answer<T>(answer: Answer<T>, render: (data: T) => string): void {
    this.stdout.write(this.mode === 'json' ? `${answer.text.trim()}\n` : ensureNewline(render(answer.data)));
  }

  /** One item of a stream (`listen`): one JSON document a line, or its readable line. */
  item<T>(item: T, render: (item: T) => string): void {
    this.stdout.write(this.mode === 'json' ? `${JSON.stringify(item)}\n` : ensureNewline(render(item)));
  }
}

function ensureNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}

type Cell = string | number | boolean | null | undefined;

/**
 * A small table: a header row, then one row an item, columns padded to their widest cell (the last
 * one is not padded, so long URLs and descriptions do not push trailing blanks).
 */
export function table(headers: string[], rows: Cell[][], empty = '(none)'): string {
  if (rows.length === 0) return `${empty}\n`;
  const text = [headers, ...rows.map((row) => row.map(cellText))];
  const widths = headers.map((_, column) => Math.max(...text.map((row) => (row[column] ?? '').length)));
  return text
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
    .concat('\n');
}

function cellText(cell: Cell): string {
  if (cell === null || cell === undefined || cell === '') return '-';
  return String(cell);
}
