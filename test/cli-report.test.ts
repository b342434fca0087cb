import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failingChecks, formatProbe, formatReport } from '../src/cli/report.js';
import { testConfig } from '../src/config/index.js';
import { CHECK_IDS, type Report } from '../src/report/schema.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { signedBy, startAnsweringReceiver } from './answering-receiver.js';
import { callSandbox, newAccountAt, type Run, runCli } from './cli-harness.js';
import { closedPortUrl } from './receiver.js';
import { elementsNamed, parseXml } from './xml.js';

/**
 * `shipping-sandbox report` and `probe` as a CI job runs them: the built command (`dist/main.js`;
 * `npm test` builds it first) as a child process against a real sandbox on a free loopback port,
 * judged by its exit status, its output and the JUnit file it writes. Each test works in an account
 * of its own, so the tests run side by side.
 */

const SPAWNS = 60_000;
const SECRET = 'whsec_cli-report-0123456789';

let sandbox: RunningSandbox;
let folder: string;
beforeAll(async () => {
  sandbox = await startServer(testConfig());
  folder = mkdtempSync(join(tmpdir(), 'cli-report-'));
});
afterAll(async () => {
  await sandbox.close();
  rmSync(folder, { recursive: true, force: true });
});

/** The built command with the sandbox's address and the account's key in its variables. */
const cli = (args: string[], key: string, env: Record<string, string> = {}): Promise<Run> =>
  runCli(sandbox.origin, args, { SHIPPING_SANDBOX_KEY: key, ...env });

const api = (method: string, path: string, key: string | null, body?: unknown) =>
  callSandbox(sandbox.origin, method, path, key, body);
const newAccount = () => newAccountAt(sandbox.origin);

/** An account whose client called again at once after a 429 that asked it to wait 30 s. */
async function impatientAccount(): Promise<string> {
  const key = await newAccount();
  const fault = { method: 'GET', path: '/v1/shipments', status: 429, retry_after: 30, times: 1 };
  expect((await api('POST', '/_sandbox/faults', key, fault)).status).toBe(201);
  expect((await api('GET', '/v1/shipments', key)).status).toBe(429);
  expect((await api('GET', '/v1/shipments', key)).status).toBe(200);
  return key;
}

describe.concurrent('shipping-sandbox report', () => {
  it(
    'exits with 0 when no check fails, and prints each check on a terminal',
    async () => {
      const key = await newAccount();
      expect((await api('GET', '/v1/shipments', key)).status).toBe(200);
      const run = await cli(['report', '--pretty'], key);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^pass {10}uses_valid_keys {4,}Every API request \(1\) came with a key/m);
      expect(run.stdout).toMatch(/^not observed {2}respects_retry_after /m);
      for (const id of CHECK_IDS) expect(run.stdout).toContain(`  ${id} `);
      expect(run.stdout).toContain('PASS: 0 failing, 1 passing, 8 not observed.');
    },
    SPAWNS,
  );

  it(
    'exits with 1 when a check fails, naming it, with the JSON report on a pipe',
    async () => {
      const key = await impatientAccount();
      const run = await cli(['report'], key);
      expect(run.code).toBe(1);
      expect(run.stderr).toBe('report: failing: respects_retry_after (fails)\n');
      const report = JSON.parse(run.stdout) as Report;
      expect(report.status).toBe('fail');
      expect(report.checks.find((check) => check.id === 'respects_retry_after')?.status).toBe('fail');
    },
    SPAWNS,
  );

  it(
    'prints the evidence with --verbose, each with both clocks',
    async () => {
      const key = await impatientAccount();
      const run = await cli(['report', '--pretty', '--verbose'], key);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/^FAIL {2}respects_retry_after: Waits for Retry-After after a 429$/m);
      expect(run.stdout).toMatch(
        /^ {4}request req_\w+ at \S+Z \(wall \S+Z\): GET \/v1\/shipments: answered 429 with Retry-After: 30$/m,
      );
    },
    SPAWNS,
  );

  it(
    'writes JUnit XML with --junit: a failure for the failing check, skipped for those not observed',
    async () => {
      const key = await impatientAccount();
      const file = join(folder, `report-${key.slice(-6)}.xml`);
      const run = await cli(['report', '--pretty', '--junit', file], key);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain(`JUnit XML written to ${file}.`);
      const xml = parseXml(readFileSync(file, 'utf8'));
      expect(xml.name).toBe('testsuites');
      expect(xml.attributes).toMatchObject({ tests: '9', failures: '1' });
      const cases = elementsNamed(xml, 'testcase');
      expect(cases.map((testCase) => testCase.attributes.name)).toEqual([...CHECK_IDS]);
      const failing = cases.filter((testCase) => elementsNamed(testCase, 'failure').length > 0);
      expect(failing.map((testCase) => testCase.attributes.name)).toEqual(['respects_retry_after']);
      const [failure] = elementsNamed(failing[0]!, 'failure');
      expect(failure?.text).toMatch(/GET \/v1\/shipments: answered 429 with Retry-After: 30/);
      const skipped = cases.find((testCase) => testCase.attributes.name === 'verifies_signatures');
      expect(elementsNamed(skipped!, 'skipped')).toHaveLength(1);

      // `-` is stdout, with nothing else on it.
      const piped = await cli(['report', '--junit', '-'], key);
      expect(piped.code).toBe(1);
      expect(elementsNamed(parseXml(piped.stdout), 'failure')).toHaveLength(1);
    },
    SPAWNS,
  );

  it(
    'fails on checks not observed with --strict, or on those --require names',
    async () => {
      const key = await newAccount();
      expect((await api('GET', '/v1/shipments', key)).status).toBe(200);
      const [strict, required, met] = await Promise.all([
        cli(['report', '--strict'], key),
        cli(['report', '--require', 'verifies_signatures,uses_valid_keys'], key),
        cli(['report', '--require', 'uses_valid_keys'], key),
      ]);
      expect(strict.code).toBe(1);
      expect(strict.stderr).toContain('respects_retry_after (not observed, --strict)');
      expect(required.code).toBe(1);
      expect(required.stderr).toBe('report: failing: verifies_signatures (not observed, required)\n');
      expect(met.code).toBe(0);
    },
    SPAWNS,
  );

  it(
    'exits with 2 without a verdict: no sandbox, a refused key, a JUnit file it cannot write, a check that does not exist',
    async () => {
      const key = await newAccount();
      const [unreachable, refused, unwritable, unknown] = await Promise.all([
        cli(['report'], key, { SHIPPING_SANDBOX_URL: new URL(await closedPortUrl()).origin }),
        cli(['report'], 'svc_test_not-a-key'),
        cli(['report', '--junit', join(folder, 'no-such-folder', 'report.xml')], key),
        cli(['report', '--require', 'reads_the_docs'], key),
      ]);
      expect(unreachable.code).toBe(2);
      expect(unreachable.stderr).toMatch(
        /cannot reach the sandbox at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/,
      );
      expect(refused.code).toBe(2);
      expect(refused.stderr).toBe('error: The API key is not valid. (401 invalid_api_key)\n');
      expect(JSON.parse(refused.stdout)).toEqual({
        error: { code: 'invalid_api_key', message: 'The API key is not valid.' },
      });
      expect(unwritable.code).toBe(2);
      expect(unwritable.stderr).toMatch(/^error: cannot write .*no-such-folder.*ENOENT/);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain('No check reads_the_docs; the checks are respects_retry_after, ');
    },
    SPAWNS,
  );
});

describe.concurrent('shipping-sandbox probe', () => {
  it(
    'exits with 0 for a receiver that checks signatures, 1 for one that takes a forgery, 2 for no webhook',
    async () => {
      const key = await newAccount();
      const careful = await startAnsweringReceiver((request) => ({
        status: signedBy(SECRET, request) ? 200 : 401,
      }));
      const careless = await startAnsweringReceiver(() => ({ status: 200 }));
      try {
        const hooks = [];
        for (const receiver of [careful, careless]) {
          const hook = await api('POST', '/v1/webhooks', key, {
            url: receiver.url,
            events: ['tracking.updated'],
            secret: SECRET,
          });
          expect(hook.status).toBe(201);
          hooks.push(hook.body.id as string);
        }
        const [good, bad, missing] = await Promise.all([
          cli(['probe', hooks[0]!, '--pretty'], key),
          cli(['probe', hooks[1]!], key),
          cli(['probe', 'wh_01JD0000000000000000000000'], key),
        ]);
        expect(good.stderr).toBe('');
        expect(good.code).toBe(0);
        expect(good.stdout).toMatch(/^genuine +dlv_\w+ +answered 200 /m);
        expect(good.stdout).toMatch(/^forged +dlv_\w+ +answered 401 /m);
        expect(good.stdout).toContain('The receiver verifies signatures');
        expect(bad.code).toBe(1);
        expect(bad.stderr).toMatch(
          /^probe: The receiver does not verify signatures: it accepted the forged delivery/,
        );
        expect(JSON.parse(bad.stdout)).toMatchObject({
          verifies_signatures: false,
          forged: { response_status: 200 },
        });
        expect(missing.code).toBe(2);
        expect(missing.stderr).toMatch(/\(404 not_found\)\n$/);
        // The report judges by the probes.
        const report = JSON.parse((await cli(['report'], key)).stdout) as Report;
        expect(report.checks.find((check) => check.id === 'verifies_signatures')?.status).toBe('fail');
      } finally {
        await Promise.all([careful.close(), careless.close()]);
      }
    },
    SPAWNS,
  );
});

describe('the readable forms', () => {
  const report: Report = {
    account_id: 'acct_1',
    generated_at: '2026-11-30T14:01:01Z',
    generated_wall_at: '2026-11-22T08:01:01Z',
    status: 'fail',
    checks: [
      {
        id: 'respects_retry_after',
        title: 'Waits for Retry-After after a 429',
        status: 'fail',
        summary: 'Called again 1.0 s after a 429.',
        counts: { passed: 0, failed: 1 },
        evidence: [
          {
            kind: 'request',
            id: 'req_1',
            at: '2026-11-30T14:00:00Z',
            wall_at: '2026-11-22T08:00:00Z',
            detail: 'GET /v1/shipments: answered 429',
          },
        ],
      },
      {
        id: 'uses_valid_keys',
        title: 'Calls only with keys that are valid',
        status: 'not_observed',
        summary: 'No API request yet.',
        counts: { passed: 0, failed: 0 },
        evidence: [],
      },
    ],
  };

  it('writes the report as a table, or check by check with its evidence', () => {
    expect(formatReport(report, { verbose: false })).toBe(
      [
        "Integration report of acct_1, 2026-11-30T14:01:01Z on the account's clock (2026-11-22T08:01:01Z by the wall clock)",
        '',
        'STATUS        CHECK                 SUMMARY',
        'FAIL          respects_retry_after  Called again 1.0 s after a 429.',
        'not observed  uses_valid_keys       No API request yet.',
        '',
        'FAIL: 1 failing, 0 passing, 1 not observed. --verbose lists the evidence.',
        '',
      ].join('\n'),
    );
    expect(formatReport(report, { verbose: true })).toContain(
      [
        'FAIL  respects_retry_after: Waits for Retry-After after a 429',
        '  Called again 1.0 s after a 429.',
        '  1 failing, 0 passing',
        '    request req_1 at 2026-11-30T14:00:00Z (wall 2026-11-22T08:00:00Z): GET /v1/shipments: answered 429',
        '',
        'not observed  uses_valid_keys: Calls only with keys that are valid',
        '  No API request yet.',
        '  nothing judged yet',
      ].join('\n'),
    );
  });

  it('gates on failures; on checks not observed only when asked', () => {
    expect(failingChecks(report, { strict: false, require: [] })).toEqual(['respects_retry_after (fails)']);
    expect(failingChecks(report, { strict: true, require: [] })).toEqual([
      'respects_retry_after (fails)',
      'uses_valid_keys (not observed, --strict)',
    ]);
    expect(
      failingChecks(report, { strict: false, require: ['uses_valid_keys', 'verifies_signatures'] }),
    ).toEqual([
      'respects_retry_after (fails)',
      'uses_valid_keys (not observed, required)',
      "verifies_signatures (not in this sandbox's report)",
    ]);
  });

  it('says what a probe found, including when it found nothing', () => {
    const attempt = (status: number | null) => ({
      delivery_id: 'dlv_1',
      response_status: status,
      error: status === null ? ('timeout' as const) : status < 300 ? null : ('http' as const),
      duration_ms: status === null ? null : 3,
    });
    expect(formatProbe({ genuine: attempt(200), forged: attempt(401), verifies_signatures: true })).toContain(
      'it accepted the genuine delivery and refused the forged one',
    );
    expect(formatProbe({ genuine: attempt(500), forged: attempt(null), verifies_signatures: false })).toMatch(
      /^forged +dlv_1 +no answer \(timeout\) +-\n[\s\S]*did not accept the genuine delivery either/m,
    );
  });
});
