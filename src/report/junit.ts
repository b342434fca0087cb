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

/** Characters outside XML 1.0's `Char` production (control characters, lone surrogates, U+FFFE/F). */
const NOT_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
const ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
};

function text(value: string): string {
  return value.replace(NOT_XML, '\uFFFD').replace(/[&<>"']/g, (char) => ENTITIES[char] as string);
}

/** An attribute's value: escaped as text, and its line breaks kept as references (not normalised away). */
function attribute(value: string): string {
  return text(value).replace(/\n/g, '&#10;').replace(/\r/g, '&#13;').replace(/\t/g, '&#9;');
}
