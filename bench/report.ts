import type { LoadResult } from './load.js';

export interface Target {
  text: string;
  /** `null`: not judged (the figure is missing). */
  met: boolean | null;
}

export interface Latency {
  rps: number;
  p50: number;
  p99: number;
}

/**
 * A load figure: the sandbox, the ceiling measured beside it when there is one, and what the row is
 * judged against (the bare Hono floor, another endpoint) when that is not the ceiling.
 */
export interface LoadRow {
  section: string;
  scenario: string;
  connections: number;
  sandbox: Latency;
  ceiling?: Latency;
  /** Sandbox rps over ceiling rps, the mean of the rounds' ratios. */
  ratio?: number;
  pairRatios?: number[];
  /** Measured in the same rounds as the sandbox, between the ceiling and it. */
  reference?: Latency & { name: string };
  /** Sandbox rps over the reference's, the mean of the rounds' ratios: what `target` judges. */
  referenceRatio?: number;
  referencePairRatios?: number[];
  target?: Target;
  note?: string;
  runs?: { sandbox: LoadResult[]; ceiling: LoadResult[]; reference?: LoadResult[] };
}

/** Any other figure: a start-up time, a memory size, a rate. */
export interface FigureRow {
  section: string;
  scenario: string;
  figure: string;
  target?: Target;
  note?: string;
  details?: Record<string, unknown>;
}

const fmt = (n: number | undefined, digits = 2): string =>
  n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(digits);
const rps = (n: number | undefined) =>
  n === undefined || !Number.isFinite(n) ? '-' : Math.round(n).toString();
const met = (t: Target | undefined) => (t === undefined ? '' : t.met === null ? '?' : t.met ? 'yes' : 'NO');

function table(head: string[], rows: string[][], right: boolean[]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (right[i] ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function loadTable(rows: LoadRow[]): string {
  return table(
    [
      'scenario',
      'conns',
      'rps',
      'p50 ms',
      'p99 ms',
      'ceiling rps',
      '÷ ceiling',
      'against',
      'its rps',
      'ratio',
      'target',
      'met?',
    ],
    rows.map((r) => [
      r.scenario + (r.note ? ` (${r.note})` : ''),
      String(r.connections),
      rps(r.sandbox.rps),
      fmt(r.sandbox.p50),
      fmt(r.sandbox.p99),
      rps(r.ceiling?.rps),
      fmt(r.ratio),
      r.reference?.name ?? '',
      r.reference ? rps(r.reference.rps) : '',
      r.referenceRatio === undefined ? '' : fmt(r.referenceRatio),
      r.target?.text ?? '',
      met(r.target),
    ]),
    [false, true, true, true, true, true, true, false, true, true, false, false],
  );
}

export function figureTable(rows: FigureRow[]): string {
  return table(
    ['measure', 'figure', 'target', 'met?'],
    rows.map((r) => [r.scenario, r.figure, r.target?.text ?? '', met(r.target)]),
    [false, false, false, false],
  );
}

/** JSON without the raw latency samples. */
export function toJson(value: unknown): string {
  return `${JSON.stringify(value, (key, v) => (key === 'samples' ? undefined : v), 2)}\n`;
}
