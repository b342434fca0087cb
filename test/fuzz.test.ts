import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAnswer } from '../scripts/fuzz/checker.js';
import { ApiDocument, type JsonSchema, type Operation } from '../scripts/fuzz/document.js';
import { runFuzz } from '../scripts/fuzz/fuzzer.js';
import { jsonRequest, send } from '../scripts/fuzz/http.js';
import { summarise } from '../scripts/fuzz/report.js';
import { keepUrlsOnLoopback } from '../scripts/fuzz/safety.js';
import { arbitraryOf } from '../scripts/fuzz/schema-arbitrary.js';
import { testConfig } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';

describe('the fuzzing pass (npm run fuzz)', () => {
  let sandbox: RunningSandbox;
  let document: ApiDocument;
  beforeAll(async () => {
    sandbox = await startServer(testConfig());
    document = new ApiDocument((await (await fetch(`${sandbox.origin}/openapi.json`)).json()) as JsonSchema);
  });
  afterAll(() => sandbox.close());

  const operation = (key: string): Operation => {
    const found = document.operations().find((o) => o.key === key);
    if (!found) throw new Error(`${key} is not in the document`);
    return found;
  };
  const answer = (status: number, body: string, contentType = 'application/json') => ({
    status,
    headers: new Headers({ 'content-type': contentType }),
    text: body,
  });

  // Every documented operation, each with its share of the requests, over a real socket: on a busy
  // machine the label rendering behind downloads and previews takes most of the time.
  it('answers every operation with no 5xx and nothing the document does not say', {
    timeout: 60_000,
  }, async () => {
    const report = await runFuzz({ origin: sandbox.origin, seed: 2026, requests: 300 });
    const summary = summarise(report);
    expect(report.serverErrors, summary).toBe(0);
    expect(report.breaks, summary).toBe(0);
    expect(report.lost, summary).toBe(0);
    expect(report.sent).toBeGreaterThanOrEqual(300);
    // Every route of the document was fuzzed, and the requests reached both its successes and its refusals.
    const documented = document.operations().filter((o) => o.documented);
    const fuzzed = report.operations.filter((o) => o.documented && o.sent > 0).map((o) => o.operation);
    expect(fuzzed.sort()).toEqual(documented.map((o) => o.key).sort());
    const statuses = report.operations.flatMap((o) => Object.keys(o.statuses).map(Number));
    expect(statuses.some((s) => s >= 200 && s < 300)).toBe(true);
    expect(statuses.some((s) => s >= 400 && s < 500)).toBe(true);
  });

  it('counts an answer that breaks its schema, its media type or its status', () => {
    const get = operation('GET /v1/shipments');
    const kinds = (status: number, body: string, type?: string) =>
      checkAnswer(document, get, answer(status, body, type)).map((p) => p.kind);

    expect(kinds(200, '{"data":[],"meta":{"total":0,"cursor":null,"has_more":false}}')).toEqual([]);
    expect(kinds(200, '{"data":[],"meta":{"total":"0","cursor":null,"has_more":false}}')).toEqual(['schema']);
    expect(kinds(200, '{"data":[]}')).toEqual(['schema']);
    expect(kinds(200, '{"data":[],"meta":{"total":0,"cursor":null,"has_more":false}}', 'text/plain')).toEqual(
      ['content_type'],
    );
    expect(kinds(200, '{"data":')).toEqual(['not_json']);
    expect(kinds(202, '{}')).toEqual(['undocumented_status']);
    // A status the operation does not list is undocumented, the contract's error body or not; only
    // the answers that never reach an operation (no route, a request Node's parser refused) are not.
    expect(kinds(404, '{"error":{"code":"not_found","message":"No such shipment."}}')).toEqual([
      'undocumented_status',
    ]);
    expect(kinds(422, '{"error":{"code":"no_active_label","message":"No label."}}')).toEqual([
      'undocumented_status',
    ]);
    expect(kinds(404, '{"error":{"code":"route_not_found","message":"No such route."}}')).toEqual([]);
    expect(kinds(400, '{"error":{"code":"invalid_request","message":"Bad request."}}')).toEqual([]);
    const read = operation('GET /v1/shipments/{id}');
    const readKinds = (status: number, body: string) =>
      checkAnswer(document, read, answer(status, body)).map((p) => p.kind);
    expect(readKinds(404, '{"error":{"code":"not_found","message":"No such shipment."}}')).toEqual([]);
    expect(readKinds(404, '{"error":{"code":"not_found"}}')).toEqual(['schema']);
    // A listed status with a code the operation does not list breaks its schema.
    expect(readKinds(404, '{"error":{"code":"webhook_deleted","message":"No."}}')).toEqual(['schema']);
    expect(
      kinds(500, '{"error":{"code":"internal_error","message":"An unexpected error occurred."}}'),
    ).toEqual(['server_error']);
    // A timestamp in any form but the contract's (UTC, whole seconds) breaks `date-time`.
    const clock = operation('GET /_sandbox/clock');
    expect(
      checkAnswer(document, clock, answer(200, '{"now":"2026-11-22T08:23:14Z","speed":1,"frozen":false}')),
    ).toEqual([]);
    expect(
      checkAnswer(
        document,
        clock,
        answer(200, '{"now":"2026-11-22T08:23:14.000Z","speed":1,"frozen":false}'),
      ),
    ).toHaveLength(1);
    // A method the path lacks may only be refused.
    const wrong = document.operations().find((o) => !o.documented && o.path === '/v1/shipments');
    expect(wrong).toBeDefined();
    if (wrong) {
      expect(
        checkAnswer(document, wrong, answer(405, '{"error":{"code":"method_not_allowed","message":"No."}}')),
      ).toEqual([]);
      expect(checkAnswer(document, wrong, answer(200, '{}')).map((p) => p.kind)).toEqual([
        'undocumented_status',
      ]);
    }
  });

  it('counts a route that answers 500 (an injected fault) as a 5xx, unless it is a known finding', async () => {
    const injectFault = async (account: { key: string }) => {
      const created = await send(
        sandbox.origin,
        jsonRequest('POST', '/_sandbox/faults', account.key, {
          method: 'GET',
          path: '/v1/shipments',
          status: 500,
        }),
      );
      expect(created.status).toBe(201);
    };
    const options = {
      origin: sandbox.origin,
      seed: 7,
      requests: 40,
      only: ['GET /v1/shipments'],
      onAccount: injectFault,
    };

    const report = await runFuzz(options);
    expect(report.serverErrors).toBeGreaterThan(0);
    const finding = report.findings.find((f) => f.kind === 'server_error');
    expect(finding).toMatchObject({ operation: 'GET /v1/shipments', status: 500, seed: 7 });
    expect(finding?.request.url).toContain('/v1/shipments');
    expect(summarise(report)).toContain('5xx answers:                        ');

    const skipped = await runFuzz({
      ...options,
      knownFindings: [
        {
          id: 'injected',
          reason: 'the test injected it',
          operation: 'GET /v1/shipments',
          kind: 'server_error',
        },
      ],
    });
    expect(skipped.serverErrors).toBe(0);
    expect(skipped.known).toBeGreaterThan(0);
  });

  it('generates request bodies that conform to the document when asked for valid ones', () => {
    for (const op of document.operations().filter((o) => o.body)) {
      const pointer = `#/paths/${op.documentPath.replaceAll('~', '~0').replaceAll('/', '~1')}/${op.method.toLowerCase()}/requestBody/content/application~1json/schema`;
      const arbitrary = arbitraryOf(op.body as JsonSchema, {
        resolve: (ref) => document.resolve(ref),
        hint: () => undefined,
        realistic: false,
      });
      for (const value of fc.sample(arbitrary, { seed: 1, numRuns: 50 }))
        expect(document.validate(pointer, value), `${op.key}: ${JSON.stringify(value)}`).toBeNull();
    }
  });
});

describe('the fuzzer never points the sandbox at another host', () => {
  const receiver = 'http://127.0.0.1:9999/hooks';

  it('replaces every http(s) url field that names a host other than loopback', () => {
    const body = {
      url: 'https://example.com/hooks',
      nested: [{ url: 'http://10.0.0.1/' }, { url: 'http://169.254.169.254/latest' }],
      other: 'https://example.com/kept-as-it-is-not-a-url-field',
    };
    expect(keepUrlsOnLoopback(body, receiver)).toEqual({
      url: receiver,
      nested: [{ url: receiver }, { url: receiver }],
      other: 'https://example.com/kept-as-it-is-not-a-url-field',
    });
  });

  it('keeps loopback URLs and text that is no http(s) URL, for the sandbox to refuse', () => {
    for (const url of [
      'http://127.0.0.1:1/x',
      'http://localhost:8080/',
      'http://[::1]:1/',
      'not a url',
      'ftp://x/',
    ])
      expect(keepUrlsOnLoopback({ url }, receiver)).toEqual({ url });
    const hostile = keepUrlsOnLoopback(JSON.parse('{"__proto__":{"url":"https://example.com"}}'), receiver);
    expect(Object.getOwnPropertyDescriptor(hostile, '__proto__')?.value).toEqual({ url: receiver });
  });
});
