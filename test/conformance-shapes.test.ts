import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Answer, compareAnswers, fileKind } from '../src/conformance/compare.js';
import { ApiDescription, type JsonSchema } from '../src/conformance/document.js';
import { baseUrlOf, testKeyOf, unknownLike } from '../src/conformance/run.js';
import { SCRIPT } from '../src/conformance/script.js';
import { createTestSandbox } from './helpers.js';

/**
 * The conformance script and the comparison of two answers, on the sandbox's own OpenAPI document and
 * answers it really gave, changed the ways another deployment could differ. (test/conformance.test.ts
 * runs the whole command against other processes.)
 */

let api: ApiDescription;
let shipment: Record<string, unknown>;
let list: Record<string, unknown>;
beforeAll(async () => {
  const sandbox = await createTestSandbox();
  api = new ApiDescription((await sandbox.call('GET', '/openapi.json', { key: null })).json as JsonSchema);
  shipment = await sandbox.newShipment({ carrier: 'ups', service: 'ground' });
  await sandbox.newShipment();
  list = (await sandbox.call('GET', '/v1/shipments')).json;
});

const RATE_HEADERS = {
  'x-ratelimit-limit': '300',
  'x-ratelimit-remaining': '299',
  'x-ratelimit-reset': '1795000000',
};

function answer(status: number, body: unknown, headers: Record<string, string> = {}): Answer {
  const bytes = new TextEncoder().encode(JSON.stringify(body));
  return {
    status,
    headers: new Headers({ 'content-type': 'application/json', ...RATE_HEADERS, ...headers }),
    bytes,
    json: body,
  };
}

const copy = <T>(value: T): T => structuredClone(value);

describe('the script', () => {
  const placeholders = (step: (typeof SCRIPT)[number]) =>
    [...`${step.call} ${JSON.stringify(step.body ?? null)}`.matchAll(/\{(?:unknown:)?([a-z_]+)\./g)].map(
      ([, name]) => name as string,
    );

  it('names each step once, describes each answer by an operation of the document, and uses only values kept before', () => {
    expect(new Set(SCRIPT.map((step) => step.id)).size).toBe(SCRIPT.length);
    const kept = new Set(['input']);
    for (const step of SCRIPT) {
      expect(api.has(step.operation), `${step.id}: ${step.operation}`).toBe(true);
      for (const name of placeholders(step)) expect(kept.has(name), `${step.id} uses {${name}…}`).toBe(true);
      if (step.as) kept.add(step.as);
    }
  });

  it('is listed, step by step, in docs/conformance.md', () => {
    const doc = readFileSync('docs/conformance.md', 'utf8');
    for (const step of SCRIPT) expect(doc, step.id).toContain(`\`${step.id}\``);
  });

  it('never calls /_sandbox, and says why of every step it skips', () => {
    for (const step of SCRIPT) {
      expect(step.call).not.toMatch(/_sandbox/);
      if (step.skip !== undefined) expect(step.skip.length).toBeGreaterThan(20);
    }
    expect(SCRIPT.filter((step) => step.skip?.includes('forced tracking status')).map((s) => s.id)).toEqual([
      'tracking.get.delivered',
      'labels.void.scanned',
      'shipments.cancel.delivered',
    ]);
  });

  it('covers every operation of the specification, and the errors the contract lists', () => {
    const run = SCRIPT.filter((step) => step.skip === undefined);
    const operations = new Set(run.map((step) => step.operation));
    for (const operation of [
      'POST /shipments',
      'GET /shipments',
      'GET /shipments/{id}',
      'DELETE /shipments/{id}',
      'POST /labels',
      'GET /labels/{id}/download',
      'DELETE /labels/{id}',
      'GET /tracking/{tracking_number}',
      'POST /webhooks',
    ])
      expect(operations, operation).toContain(operation);
    const expected = run.map((step) => step.expect);
    for (const answer of [
      '401 missing_api_key',
      '401 invalid_api_key',
      '422 missing_field to',
      '422 invalid_field parcel.weight',
      '404 not_found',
      '400 invalid_parameter cursor',
      '422 shipment_not_cancellable',
      '422 label_already_voided',
    ])
      expect(expected, answer).toContain(answer);
    // Each format is bought, downloaded with the key and fetched through its label_url.
    for (const format of ['pdf', 'png', 'zpl'])
      expect(run.map((step) => step.id)).toEqual(
        expect.arrayContaining([
          `labels.create.${format}`,
          `labels.download.${format}`,
          `labels.url.${format}`,
        ]),
      );
    expect(run.find((step) => step.id === 'shipments.list.next-page')?.call).toContain('{page.meta.cursor}');
    expect(run.find((step) => step.id === 'tracking.get')?.call).toBe('GET /tracking/{pdf.tracking_number}');
  });
});

describe('comparing two answers', () => {
  it('finds nothing between two answers of the same shape, whatever their values', () => {
    const other = copy(shipment);
    Object.assign(other, {
      id: 'shp_a1b2c3',
      created_at: '1999-01-01T00:00:00Z',
      rate: { amount: '999.99', currency: 'EUR' },
      carrier: 'fedex',
    });
    const differences = compareAnswers(
      answer(201, shipment),
      answer(201, other, { 'content-type': 'application/json; charset=utf-8', 'x-ratelimit-limit': '60' }),
      'POST /shipments',
      api,
    );
    expect(differences).toEqual([]);
  });

  it('names each path whose type or documented format differs, and says nothing below a part that is missing', () => {
    const other = copy(shipment) as Record<string, any>;
    other.id = 'ship_42';
    other.created_at = '2026-11-22T08:23:14.512Z';
    other.rate.amount = 12.4;
    other.status = 'pending';
    other.object = 'shipment';
    delete other.to;
    other.parcel.weight = '1200';
    const differences = compareAnswers(answer(201, shipment), answer(201, other), 'POST /shipments', api);
    expect(differences).toEqual([
      {
        path: 'body.id',
        expected: 'string /^shp_[0-9A-Za-z_-]+$/',
        actual: 'string not matching /^shp_[0-9A-Za-z_-]+$/, e.g. "ship_42"',
      },
      { path: 'body.status', expected: '"created"', actual: '"pending"' },
      { path: 'body.rate.amount', expected: 'string /^\\d+\\.\\d{2}$/', actual: 'number' },
      { path: 'body.to', expected: 'object', actual: '(absent)' },
      { path: 'body.parcel.weight', expected: 'integer', actual: 'string' },
      {
        path: 'body.created_at',
        expected: 'string /^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$/',
        actual:
          'string not matching /^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$/, e.g. "2026-11-22T08:23:14.512Z"',
      },
      { path: 'body.object', expected: '(absent)', actual: 'string' },
    ]);
  });

  it("compares an array's elements by their shape: any documented status among them, none after an empty array", () => {
    const other = copy(list) as Record<string, any>;
    other.data[0].status = 'delivered';
    other.data[1].status = 'cancelled';
    expect(compareAnswers(answer(200, list), answer(200, other), 'GET /shipments', api)).toEqual([]);

    other.data[1].status = 'lost_in_space';
    other.data[1].label_id = 'label_1';
    expect(compareAnswers(answer(200, list), answer(200, other), 'GET /shipments', api)).toEqual([
      {
        path: 'body.data[].status',
        expected: 'one of created|label_generated|in_transit|delivered|cancelled',
        actual:
          'one of created|label_generated|in_transit|delivered|cancelled | string not one of created|label_generated|in_transit|delivered|cancelled, e.g. "lost_in_space"',
      },
      {
        path: 'body.data[].label_id',
        expected: 'null',
        actual: 'null | string not matching /^lbl_[0-9A-Za-z_-]+$/, e.g. "label_1"',
      },
    ]);

    const empty = { data: [], meta: { total: 0, cursor: null, has_more: false } };
    expect(compareAnswers(answer(200, list), answer(200, empty), 'GET /shipments', api)).toEqual([]);
  });

  it('compares the status, the media type, the rate-limit headers, and an error by its code and field', () => {
    const notFound = { error: { code: 'not_found', message: 'No shipment shp_1.' } };
    const gone = { error: { code: 'resource_missing', message: 'Gone.', field: 'id' } };
    const { 'x-ratelimit-remaining': _dropped, ...fewer } = RATE_HEADERS;
    const target: Answer = {
      ...answer(410, gone),
      headers: new Headers({ 'content-type': 'text/json', ...fewer }),
    };
    expect(compareAnswers(answer(404, notFound), target, 'GET /shipments/{id}', api)).toEqual([
      { path: 'status', expected: 404, actual: 410 },
      { path: 'header:content-type', expected: 'application/json', actual: 'text/json' },
      { path: 'header:x-ratelimit-remaining', expected: 'present', actual: '(absent)' },
      { path: 'body.error.code', expected: '"not_found"', actual: '"resource_missing"' },
      { path: 'body.error.field', expected: '(absent)', actual: '"id"' },
    ]);
  });

  it('says which code the target refused with where the sandbox succeeded, not the shapes of the two bodies', () => {
    const refused = { error: { code: 'service_unavailable', message: 'Try later.' } };
    expect(compareAnswers(answer(201, shipment), answer(503, refused), 'POST /shipments', api)).toEqual([
      { path: 'status', expected: 201, actual: 503 },
      { path: 'body.error.code', expected: '(absent)', actual: '"service_unavailable"' },
    ]);
  });

  it('says when the target gave no answer, and what a body that is not JSON is', () => {
    const silent: Answer = {
      status: null,
      failure: 'connect ECONNREFUSED',
      headers: new Headers(),
      bytes: new Uint8Array(),
    };
    expect(compareAnswers(answer(200, shipment), silent, 'GET /shipments/{id}', api)).toEqual([
      { path: 'status', expected: 200, actual: 'no answer (connect ECONNREFUSED)' },
    ]);
    const html: Answer = {
      status: 200,
      headers: new Headers({ 'content-type': 'text/html', ...RATE_HEADERS }),
      bytes: new TextEncoder().encode('<html>Bad gateway</html>'),
    };
    expect(compareAnswers(answer(200, shipment), html, 'GET /shipments/{id}', api)).toEqual([
      { path: 'header:content-type', expected: 'application/json', actual: 'text/html' },
      { path: 'body', expected: 'object', actual: 'neither JSON nor a PDF, PNG or ZPL file' },
    ]);
    expect(fileKind(new TextEncoder().encode('%PDF-1.7\n'))).toBe('PDF document');
    expect(fileKind(Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0))).toBe('PNG image');
    expect(fileKind(new TextEncoder().encode('\n^XA^FO50,50^XZ'))).toBe('ZPL label');
    expect(fileKind(new Uint8Array())).toBe('empty');
  });
});

describe('values the script makes up', () => {
  it('an unknown id keeps the form of a real one', () => {
    expect(unknownLike('shp_01M8E3V4J309AGQTJRXYEDAYFE')).toBe('shp_01M8E3V4J309AGQTJR00000000');
    expect(unknownLike('1Z99U5MM0380044021')).toBe('1Z99U5MM0380000000');
    expect(unknownLike('lbl_900000000')).toBe('lbl_900001111');
  });

  it('the key must be a test key', () => {
    expect(testKeyOf(' svc_test_abc ')).toBe('svc_test_abc');
    expect(() => testKeyOf('svc_live_abc')).toThrow(/Refusing a live key/);
    expect(() => testKeyOf('')).toThrow(/must be a test key/);
  });

  it('the target must be a base URL ending in /v1, with no credentials in it', () => {
    expect(() => baseUrlOf('https://me:secret@api.example.com/v1')).toThrow(
      /^The target must not carry a user name or password: the key goes in its own option\.$/,
    );
    expect(baseUrlOf('https://api.example.com/v1/')).toBe('https://api.example.com/v1');
    expect(baseUrlOf(' http://127.0.0.1:4010/v1 ')).toBe('http://127.0.0.1:4010/v1');
    for (const wrong of [
      'https://api.example.com',
      'api.example.com/v1',
      'ftp://x/v1',
      'https://x/v1?a=1',
      42,
    ])
      expect(() => baseUrlOf(wrong), String(wrong)).toThrow(/ending in \/v1/);
  });
});
