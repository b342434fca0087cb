import { writeFileSync } from 'node:fs';
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { z } from 'zod';
import { toJUnit } from '../report/junit.js';
import { CHECK_IDS, type Check, type Report } from '../report/schema.js';
import type { ProbeResultSchema } from '../webhooks/schema.js';
import { type Control, controlAction, Exit, type Invocation, NO_VERDICT, segment } from './control.js';
import { table } from './output.js';

export type ProbeResult = z.infer<typeof ProbeResultSchema>;

/** The exit status of a verdict that fails: a check failed, or a receiver took a forged delivery. */
export const FAILS = 1;

/**
 * `report` and `probe`: the integration report as a CI step reads it (an exit status, and JUnit XML
 * for the test-results view), and the signature probe that its `verifies_signatures` check needs.
 * Both exit with 0 (passes), 1 (fails) or 2 (no verdict: no sandbox, or it refused).
 */
export function addReportCommands(program: Command): void {
  controlAction(
    program
      .command('report')
      .description(
        "judge the account's client by what the sandbox saw (GET /_sandbox/report); exits with 1 when a check fails",
      )
      .option('--verbose', "print each check's evidence: the requests and deliveries it judged")
      .option('--strict', 'fail on a check that has seen nothing to judge (not observed) too')
      .addOption(
        new Option('--require <checks>', 'fail unless these checks pass (comma-separated ids; repeatable)')
          .argParser(parseChecks)
          .default([], 'none'),
      )
      .option('--junit <file>', 'also write the report as JUnit XML to <file> (- for stdout, alone)')
      .addHelpText('after', REPORT_HELP),
    report,
    { errorStatus: NO_VERDICT },
  );

  controlAction(
    program
      .command('probe')
      .description(
        "send a webhook's receiver a genuine and a forged delivery; exits with 1 unless it takes only the genuine one",
      )
      .argument('<webhook-id>', 'the webhook (wh_…; see `shipping-sandbox webhooks`)'),
    probe,
    { errorStatus: NO_VERDICT },
  );
}

const REPORT_HELP = `
Exit status: 0 when no check fails, 1 when one does (with --strict, or one named by --require, also
when it has seen nothing to judge), 2 when there is no verdict (the sandbox cannot be reached or
refuses the key, or the JUnit file cannot be written).

Checks: ${CHECK_IDS.join(', ')}.

In CI, after the tests ran against the sandbox:
  shipping-sandbox report --pretty --junit sandbox-report.xml
`;

interface ReportOptions {
  verbose?: boolean;
  strict?: boolean;
  require: string[];
  junit?: string;
}

async function report({ api, out }: Control, { options }: Invocation): Promise<void> {
  const { verbose, strict, require, junit } = options as unknown as ReportOptions;
  const answer = await api.get<Report>('/_sandbox/report');
  // One read makes both the file and the exit status, so they judge the same moment: the XML is the
  // sandbox's own `?format=junit` rendering of this very report.
  if (junit === '-') process.stdout.write(toJUnit(answer.data));
  else {
    if (junit !== undefined) writeJUnit(junit, answer.data);
    out.answer(answer, (data) => formatReport(data, { verbose: verbose === true }));
    if (junit !== undefined && out.mode === 'pretty')
      process.stdout.write(`JUnit XML written to ${junit}.\n`);
  }
  const failing = failingChecks(answer.data, { strict: strict === true, require });
  if (failing.length > 0) {
    process.stderr.write(`report: failing: ${failing.join(', ')}\n`);
    throw new Exit(FAILS);
  }
}

function writeJUnit(file: string, data: Report): void {
  try {
    writeFileSync(file, toJUnit(data));
  } catch (error) {
    throw new Exit(NO_VERDICT, new Error(`cannot write ${file}: ${(error as Error).message}`));
  }
}

/**
 * What fails the verdict, each as `id (why)`: a failing check; with `strict`, one not observed; a
 * required check that did not pass, or that this sandbox does not make.
 */
export function failingChecks(data: Report, gate: { strict: boolean; require: readonly string[] }): string[] {
  const failing = data.checks.flatMap((check) => {
    if (check.status === 'fail') return [`${check.id} (fails)`];
    if (check.status === 'pass') return [];
    if (gate.strict) return [`${check.id} (not observed, --strict)`];
    if (gate.require.includes(check.id)) return [`${check.id} (not observed, required)`];
    return [];
  });
  const made = new Set(data.checks.map((check) => check.id));
  const unknown = gate.require.filter((id) => !made.has(id as Check['id']));
  return [...failing, ...unknown.map((id) => `${id} (not in this sandbox's report)`)];
}

const STATUS_WORDS: Record<Check['status'], string> = {
  // In capitals: what a reader looks for stands out without colour.
  fail: 'FAIL',
  pass: 'pass',
  not_observed: 'not observed',
};

export function formatReport(data: Report, options: { verbose: boolean }): string {
  const count = (status: Check['status']) => data.checks.filter((check) => check.status === status).length;
  const head = `Integration report of ${data.account_id}, ${data.generated_at} on the account's clock (${data.generated_wall_at} by the wall clock)\n\n`;
  const body = options.verbose
    ? data.checks.map(formatCheckInFull).join('\n')
    : table(
        ['STATUS', 'CHECK', 'SUMMARY'],
        data.checks.map((check) => [STATUS_WORDS[check.status], check.id, check.summary]),
        'No checks.',
      );
  const verdict = `\n${STATUS_WORDS[data.status].toUpperCase()}: ${count('fail')} failing, ${count('pass')} passing, ${count('not_observed')} not observed.`;
  const more = options.verbose ? '' : ' --verbose lists the evidence.';
  return `${head}${body}${verdict}${more}\n`;
}

/** A check with its title, summary, counts and each piece of evidence on a line. */
function formatCheckInFull(check: Check): string {
  const counts =
    check.counts.passed === 0 && check.counts.failed === 0
      ? 'nothing judged yet'
      : `${check.counts.failed} failing, ${check.counts.passed} passing`;
  const evidence = check.evidence.map(
    (item) =>
      `    ${item.kind} ${item.id} at ${item.at ?? '-'} (wall ${item.wall_at ?? '-'}): ${item.detail}\n`,
  );
  return [
    `${STATUS_WORDS[check.status]}  ${check.id}: ${check.title}\n`,
    `  ${check.summary}\n`,
    `  ${counts}\n`,
    ...evidence,
  ].join('');
}

async function probe({ api, out }: Control, { args: [id] }: Invocation): Promise<void> {
  const answer = await api.post<ProbeResult>(`/_sandbox/webhooks/${segment(id)}/probe`);
  out.answer(answer, formatProbe);
  if (!answer.data.verifies_signatures) {
    process.stderr.write(`probe: ${probeVerdict(answer.data)}\n`);
    throw new Exit(FAILS);
  }
}

export function formatProbe(result: ProbeResult): string {
  const row = (name: string, attempt: ProbeResult['genuine']) => [
    name,
    attempt.delivery_id,
    attempt.response_status === null
      ? `no answer (${attempt.error ?? '-'})`
      : `answered ${attempt.response_status}`,
    attempt.duration_ms === null ? undefined : `${attempt.duration_ms} ms`,
  ];
  return `${table(['SIGNATURE', 'DELIVERY', 'ANSWER', 'TOOK'], [row('genuine', result.genuine), row('forged', result.forged)])}${probeVerdict(result)}\n`;
}

/** What the two answers say, in the words of the report's `verifies_signatures`. */
function probeVerdict(result: ProbeResult): string {
  if (result.verifies_signatures)
    return 'The receiver verifies signatures: it accepted the genuine delivery and refused the forged one.';
  const status = result.genuine.response_status;
  if (status !== null && status >= 200 && status < 300)
    return 'The receiver does not verify signatures: it accepted the forged delivery too. Check Service-Signature before acting on a delivery.';
  return 'The receiver did not accept the genuine delivery either, so the probe tells nothing of signatures: make it answer a genuine delivery with a 2xx first.';
}

/** `--require a,b`, given once or more: each a check the report makes. */
function parseChecks(text: string, previous: string[]): string[] {
  const ids = text
    .split(',')
    .map((id) => id.trim())
    .filter((id) => id !== '');
  const unknown = ids.filter((id) => !(CHECK_IDS as readonly string[]).includes(id));
  if (ids.length === 0 || unknown.length > 0)
    throw new InvalidArgumentError(
      `${unknown.length > 0 ? `No check ${unknown.join(', ')}` : 'No check named'}; the checks are ${CHECK_IDS.join(', ')}.`,
    );
  return [...previous, ...ids];
}
