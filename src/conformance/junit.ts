import { xmlAttribute as attribute, xmlText as text } from '../core/xml.js';
import { SCRIPT } from './script.js';
import type { ConformanceReport, ConformanceStep } from './types.js';

export const JUNIT_SUITE_NAME = 'shipping-sandbox conformance';
const CLASS_NAME = 'shipping-sandbox.conformance';

/**
 * The report as JUnit XML, for the test view of a CI system: one test case per step of the script, a
 * `<failure>` listing the differences of a step that differs, `<skipped>` with the reason of one that
 * was skipped.
 */
export function conformanceJUnit(report: ConformanceReport): string {
  const { same, different, skipped } = report.summary;
  const totals = `tests="${same + different + skipped}" failures="${different}" errors="0" skipped="${skipped}"`;
  return document(totals, report.target, report.steps.map(testCase));
}

/** The run that compared nothing (the target unreachable, the key refused), as one test case in error. */
export function couldNotRunJUnit(target: string, reason: string): string {
  const testCase = [
    `    <testcase classname="${CLASS_NAME}" name="conformance" time="0">`,
    `      <error message="${attribute(reason)}" type="could_not_run"/>`,
    '    </testcase>',
  ].join('\n');
  return document('tests="1" failures="0" errors="1" skipped="0"', target, [testCase]);
}

function document(totals: string, target: string, testCases: string[]): string {
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${attribute(JUNIT_SUITE_NAME)}" ${totals}>`,
    `  <testsuite name="${attribute(JUNIT_SUITE_NAME)}" ${totals} time="0">`,
    '    <properties>',
    `      <property name="target" value="${attribute(target)}"/>`,
    '    </properties>',
    ...testCases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}

function testCase(step: ConformanceStep): string {
  const open = `    <testcase classname="${CLASS_NAME}" name="${attribute(step.id)}" time="0">`;
  const title = SCRIPT.find((s) => s.id === step.id)?.title ?? step.id;
  const heading = `${title}: ${step.call}`;
  switch (step.result) {
    case 'different': {
      const lines = step.differences.map(
        (d) => `${d.path}: the sandbox answered ${d.expected}, the target ${d.actual}`,
      );
      const message = `${step.differences.length} difference${step.differences.length === 1 ? '' : 's'} from the sandbox`;
      return [
        open,
        `      <failure message="${attribute(message)}" type="different">${text([heading, ...lines].join('\n'))}</failure>`,
        '    </testcase>',
      ].join('\n');
    }
    case 'skipped':
      return [
        open,
        `      <skipped message="${attribute(step.reason ?? 'skipped')}"/>`,
        '    </testcase>',
      ].join('\n');
    case 'same':
      return [open, `      <system-out>${text(heading)}</system-out>`, '    </testcase>'].join('\n');
  }
}
