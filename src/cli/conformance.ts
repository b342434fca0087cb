import { writeFileSync } from 'node:fs';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { ConformanceError } from '../conformance/errors.js';
import { conformanceJUnit, couldNotRunJUnit } from '../conformance/junit.js';
import { baseUrlOf, DEFAULT_WEBHOOK_URL, testKeyOf } from '../conformance/run.js';
import { SCRIPT } from '../conformance/script.js';
import { EXAMPLE } from '../conformance/shape.js';
import type { ConformanceOptions, ConformanceReport } from '../conformance/types.js';
import { Exit, NO_VERDICT } from './control.js';
import { indent, plural } from './format.js';
import { table } from './output.js';

/** Runs the script with a sandbox of its own (main.ts starts it in this process). */
export type RunConformance = (options: ConformanceOptions) => Promise<ConformanceReport>;

/** The exit status when the target's answers differ from the sandbox's. */
const DIFFERENT = 1;

interface ConformanceFlags {
  target: string;
  key: string;
  json?: boolean;
  junit?: string;
  webhookUrl: string;
}

/**
 * `shipping-sandbox conformance --target <base-url> --key <key>`: the documented script against
 * another deployment of the API and a sandbox of its own, side by side, every difference named.
 * Exits with 0 (nothing differs), 1 (something does) or 2 (it could not run).
 */
export function addConformanceCommand(program: Command, run: RunConformance, version: string): void {
  program
    .command('conformance')
    .description(
      'run the same calls against another deployment of the API and a sandbox of its own; exits with 1 when they differ',
    )
    .addOption(
      new Option('--target <base-url>', "the other deployment's base URL, ending in /v1")
        .env('SHIPPING_CONFORMANCE_TARGET')
        .argParser(checked(baseUrlOf))
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--key <key>', 'a test key of the target (its data is created by the script and cleaned up)')
        .env('SHIPPING_CONFORMANCE_KEY')
        .argParser(checked(testKeyOf))
        .makeOptionMandatory(),
    )
    .option('--json', 'print the report as JSON instead of a table')
    .option('--junit <file>', 'also write the report as JUnit XML to <file>, a test case per step')
    .addOption(
      new Option(
        '--webhook-url <url>',
        'the https URL registered as a webhook (and deleted): one the target accepts',
      )
        .env('SHIPPING_CONFORMANCE_WEBHOOK_URL')
        .default(DEFAULT_WEBHOOK_URL),
    )
    .addHelpText('after', HELP)
    .action(async (flags: ConformanceFlags) => {
      const { target, key, json, junit, webhookUrl } = flags;
      let report: ConformanceReport;
      try {
        report = await run({ target, key, webhookUrl });
      } catch (error) {
        if (!(error instanceof ConformanceError)) throw error;
        if (junit !== undefined) writeJUnit(junit, couldNotRunJUnit(target, error.message));
        throw new Exit(NO_VERDICT, error);
      }
      if (junit !== undefined) writeJUnit(junit, conformanceJUnit(report));
      process.stdout.write(
        json ? `${JSON.stringify(report, null, 2)}\n` : formatConformance(report, version),
      );
      for (const cleanup of report.cleanup.filter((c) => !c.done))
        process.stderr.write(
          `conformance: could not remove what the script created on the target: ${cleanup.call} answered ${cleanup.status}; remove it by hand.\n`,
        );
      const differing = report.steps.filter((step) => step.result === 'different');
      if (differing.length > 0) {
        process.stderr.write(
          `conformance: the target differs from the sandbox in ${plural(differing.length, 'step')}: ${differing.map((s) => s.id).join(', ')}\n`,
        );
        throw new Exit(DIFFERENT);
      }
      // The table ends with the verdict; a JSON report gets it beside, for the log.
      if (json)
        process.stderr.write(
          `conformance: the target answered every step as the sandbox did (${report.summary.same} same, ${report.summary.skipped} skipped)\n`,
        );
    });
}

const HELP = `
The script (docs/conformance.md lists it) creates its own shipments, labels and a webhook on the
target with the key, never calls /_sandbox there, and cancels, voids and deletes what it created.
Steps that need the sandbox's own controls (a forced tracking status) are skipped, with the reason.

Compared for each call: the status; an error's code and field; Content-Type; whether the three
X-RateLimit-* headers are there; the shape of the JSON body (every field, its type, and the format
the sandbox's OpenAPI document gives it: id prefixes, timestamps, decimal amounts, status names).
Never compared: values that must differ (ids, times, tracking numbers, amounts, messages).

Exit status: 0 when nothing differs, 1 when something does, 2 when it could not run (the target
could not be reached, or refused the key on the first call).

Example, against a deployment's test mode:
  shipping-sandbox conformance --target https://api.example.com/v1 --key "$TEST_KEY" --junit conformance.xml
`;

/** An option's value checked by the run's own rule, whose refusal is a usage error. */
function checked(check: (text: string) => string): (text: string) => string {
  return (text) => {
    try {
      return check(text);
    } catch (error) {
      throw new InvalidArgumentError((error as Error).message);
    }
  };
}

function writeJUnit(file: string, xml: string): void {
  try {
    writeFileSync(file, xml);
  } catch (error) {
    throw new Exit(NO_VERDICT, new Error(`cannot write ${file}: ${(error as Error).message}`));
  }
}

const RESULT_WORDS: Record<ConformanceReport['steps'][number]['result'], string> = {
  // In capitals: what a reader looks for stands out without colour.
  different: 'DIFFERENT',
  same: 'same',
  skipped: 'skipped',
};

/**
 * The report for a person: every step in a table, then each step that differs with its differences
 * (what the sandbox answered, what the target did), the skipped steps and why, and the verdict.
 */
export function formatConformance(report: ConformanceReport, version: string): string {
  const { steps, summary } = report;
  const parts = [
    `Conformance of ${report.target} with shipping-sandbox ${version}, step by step:\n\n`,
    table(
      ['RESULT', 'STEP', 'CALL'],
      steps.map((step) => [RESULT_WORDS[step.result], step.id, step.call]),
    ),
  ];
  const different = steps.filter((s) => s.result === 'different');
  if (different.length > 1)
    parts.push('\nEach difference, and the steps that show it:\n', indent(distinct(different)));
  for (const step of different) {
    const title = SCRIPT.find((s) => s.id === step.id)?.title ?? step.id;
    parts.push(
      `\n${step.id}: ${step.call}\n  ${title}.\n`,
      indent(
        table(
          ['WHERE', 'SANDBOX', 'TARGET'],
          step.differences.map((d) => [d.path, d.expected, d.actual]),
        ),
      ),
    );
  }
  const skipped = steps.filter((s) => s.result === 'skipped');
  if (skipped.length > 0)
    parts.push(
      '\nSkipped:\n',
      indent(
        table(
          ['STEP', 'WHY'],
          skipped.map((s) => [s.id, s.reason]),
        ),
      ),
    );
  const removed = report.cleanup.filter((c) => c.done).map((c) => c.call);
  if (removed.length > 0) parts.push(`\nRemoved from the target afterwards: ${removed.join(', ')}.\n`);
  const verdict =
    summary.different === 0
      ? `SAME: the target answered every step as the sandbox did (${summary.same} same, ${summary.skipped} skipped).`
      : `DIFFERENT: ${plural(summary.different, 'step')} of ${steps.length} differ (${summary.same} same, ${summary.skipped} skipped). Each line above names the part of the answer, what the sandbox answered there and what the target did.`;
  parts.push(`\n${verdict}\n`);
  return parts.join('');
}

/**
 * The differences as a list of their own, each with the steps it shows in: a header dropped on every
 * answer is one line here, not one in each step.
 */
function distinct(steps: ConformanceReport['steps']): string {
  const seen = new Map<
    string,
    { path: string; expected: string | number; actual: string | number; ids: string[] }
  >();
  for (const step of steps)
    for (const d of step.differences) {
      // The same break of a format, whatever the value that showed it.
      const key = JSON.stringify([d.path, d.expected, String(d.actual).split(EXAMPLE)[0]]);
      const entry = seen.get(key) ?? { ...d, ids: [] };
      entry.ids.push(step.id);
      seen.set(key, entry);
    }
  const shown = 3;
  return table(
    ['WHERE', 'SANDBOX', 'TARGET', 'STEPS'],
    [...seen.values()].map((d) => [
      d.path,
      d.expected,
      d.actual,
      d.ids.length > shown
        ? `${d.ids.length} steps: ${d.ids.slice(0, shown).join(', ')}, …`
        : d.ids.join(', '),
    ]),
  );
}
