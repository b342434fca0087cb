import { xmlAttribute as attribute, xmlText as text } from '../core/xml.js';
import type { Check, Report } from './schema.js';

export const JUNIT_SUITE_NAME = 'shipping-sandbox integration report';

/**
 * The report as a JUnit XML document, the format CI systems show as test results: one test case per
 * check, a `<failure>` (its message the summary, its text the evidence) for a failing one, `<skipped>`
 * for one not observed. Every text and attribute is escaped, and characters XML 1.0 cannot carry are
 * replaced: paths and receivers' answers are the client's own bytes.
 */
export function toJUnit(report: Report): string {
  const count = (status: Check['status']) => report.checks.filter((check) => check.status === status).length;
  const totals = `tests="${report.checks.length}" failures="${count('fail')}" errors="0" skipped="${count('not_observed')}"`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${attribute(JUNIT_SUITE_NAME)}" ${totals}>`,
    `  <testsuite name="${attribute(JUNIT_SUITE_NAME)}" ${totals} timestamp="${attribute(report.generated_wall_at)}" time="0">`,
    '    <properties>',
    `      <property name="account_id" value="${attribute(report.account_id)}"/>`,
    `      <property name="generated_at" value="${attribute(report.generated_at)}"/>`,
    `      <property name="generated_wall_at" value="${attribute(report.generated_wall_at)}"/>`,
    '    </properties>',
    ...report.checks.map(testCase),
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}

function testCase(check: Check): string {
  const open = `    <testcase classname="shipping-sandbox.report" name="${attribute(check.id)}" time="0">`;
  const evidence = check.evidence.map(
    (item) => `${item.kind} ${item.id} at ${item.at ?? '-'} (wall ${item.wall_at ?? '-'}): ${item.detail}`,
  );
  const body = [`${check.title}: ${check.summary}`, ...evidence].join('\n');
  switch (check.status) {
    case 'fail':
      return [
        open,
        `      <failure message="${attribute(check.summary)}" type="${attribute(check.id)}">${text(body)}</failure>`,
        '    </testcase>',
      ].join('\n');
    case 'not_observed':
      return [open, `      <skipped message="${attribute(check.summary)}"/>`, '    </testcase>'].join('\n');
    case 'pass':
      return [open, `      <system-out>${text(body)}</system-out>`, '    </testcase>'].join('\n');
  }
}
