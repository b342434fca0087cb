import type { Finding, FuzzReport, OperationStats } from './fuzzer.js';

const number = (n: number) => n.toLocaleString('en-US');

/** The pass in a few lines, then by operation, then the findings with a way to send each again. */
export function summarise(report: FuzzReport): string {
  const documented = report.operations.filter((o) => o.documented);
  const wrong = report.operations.filter((o) => !o.documented);
  const lines = [
    `Fuzzing pass, seed ${report.seed}: ${number(report.sent)} requests over ${documented.length} documented operations ` +
      `and ${wrong.length} methods their paths lack, in ${(report.durationMs / 1000).toFixed(1)} s`,
    `  5xx answers:                        ${number(report.serverErrors)}`,
    `  answers that break the document:    ${number(report.breaks)}`,
    `  requests without an answer:         ${number(report.lost)}`,
    `  known findings (skipped):           ${number(report.known)}`,
    '',
    table(documented),
  ];
  if (wrong.length) lines.push('', wrongMethodLine(wrong));
  lines.push('', `Error codes answered: ${statuses(report.errorCodes)}`);
  if (report.findings.length) {
    lines.push('', 'Findings (up to 3 examples per operation and kind):');
    for (const finding of report.findings) lines.push('', ...describe(finding));
  }
  return lines.join('\n');
}

function table(operations: OperationStats[]): string {
  const width = Math.max(9, ...operations.map((o) => o.operation.length));
  const header = `${'operation'.padEnd(width)}  ${'sent'.padStart(5)}  ${'5xx'.padStart(4)}  ${'breaks'.padStart(6)}  statuses`;
  const rows = operations.map(
    (o) =>
      `${o.operation.padEnd(width)}  ${String(o.sent).padStart(5)}  ${String(o.serverErrors).padStart(4)}  ` +
      `${String(o.breaks + o.lost).padStart(6)}  ${statuses(o.statuses)}`,
  );
  return [header, ...rows].join('\n');
}

function wrongMethodLine(operations: OperationStats[]): string {
  const merged: Record<string, number> = {};
  for (const o of operations)
    for (const [status, n] of Object.entries(o.statuses)) merged[status] = (merged[status] ?? 0) + n;
  const sum = (pick: (o: OperationStats) => number) => operations.reduce((total, o) => total + pick(o), 0);
  return (
    `Methods the paths lack (${operations.length}, e.g. ${operations[0]?.operation}): ${sum((o) => o.sent)} sent, ` +
    `${sum((o) => o.serverErrors)} 5xx, ${sum((o) => o.breaks + o.lost)} breaks; ${statuses(merged)}`
  );
}

const statuses = (counts: Record<string, number>) =>
  Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, n]) => `${status}×${n}`)
    .join(' ');

function describe(finding: Finding): string[] {
  const { request } = finding;
  const headers = Object.entries(request.headers).map(
    ([name, value]) => ` -H ${shellQuote(`${name}: ${value}`)}`,
  );
  const body = request.body === undefined ? '' : ` --data-binary ${shellQuote(request.body)}`;
  return [
    `* ${finding.operation}: ${finding.kind}${finding.status ? ` (${finding.status})` : ''}, ${request.variant}`,
    `  ${finding.detail}`,
    `  curl -i -X ${request.method} ${shellQuote(request.url)}${headers.join('')}${body}`,
    `  again: npm run fuzz -- --seed ${finding.seed} --only ${shellQuote(finding.operation)} --requests ${finding.index + 1}`,
  ];
}

const shellQuote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;
