import { describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../src/http/body.js';
import { createTestSandbox, DEFAULT_KEY, expectError, shipmentRequest, type TestSandbox } from './helpers.js';

const AUTH = { authorization: `Bearer ${DEFAULT_KEY}` };

/** A request made without the helper, for bodies and headers it would fill in. */
async function raw(sandbox: TestSandbox, path: string, init: RequestInit) {
  const response = await sandbox.app.request(path, init);
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, json, text };
}

const shipmentCount = (sandbox: TestSandbox) => sandbox.db.value<number>('SELECT count(*) FROM shipments');

/** Drops a table under the running sandbox (PostgreSQL drops the foreign keys that point at it too). */
const dropTable = (sandbox: TestSandbox, table: string) =>
  sandbox.db.run(`DROP TABLE ${table}${sandbox.db.engine === 'postgres' ? ' CASCADE' : ''}`);

/** What each engine says of a table that is not there. */
const noSuchTable = (sandbox: TestSandbox, table: string) =>
  sandbox.db.engine === 'postgres'
    ? new RegExp(`relation "${table}" does not exist`)
    : new RegExp(`no such table: ${table}`);

/** A JSON object body of exactly `bytes` bytes. */
function jsonOfSize(bytes: number): string {
  const shell = '{"reference":""}';
  return `{"reference":"${'x'.repeat(bytes - shell.length)}"}`;
}

describe('request bodies', () => {
  it.each([
    ['truncated JSON', '{"from": {'],
    ['a trailing comma', '{"reference": "a",}'],
    ['single quotes', "{'reference': 'a'}"],
  ])('answers 400 invalid_json to %s', async (_name, body) => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('POST', '/v1/shipments', { body });
    expectError(response, 400, 'invalid_json');
    expect(await shipmentCount(sandbox)).toBe(0);
  });

  it.each([
    ['an array', '[{"reference": "a"}]'],
    ['a string', '"hello"'],
    ['a number', '42'],
    ['null', 'null'],
    ['true', 'true'],
  ])('answers 400 invalid_json to a body that is %s, not an object', async (_name, body) => {
    const sandbox = await createTestSandbox();
    expectError(await sandbox.call('POST', '/v1/shipments', { body }), 400, 'invalid_json');
  });

  it('answers 400 invalid_json on the sandbox routes too', async () => {
    const sandbox = await createTestSandbox();
    expectError(
      await sandbox.call('POST', '/_sandbox/accounts', { key: null, body: '{' }),
      400,
      'invalid_json',
    );
    expectError(await sandbox.call('POST', '/_sandbox/clock', { body: '[]' }), 400, 'invalid_json');
  });

  it('answers 400 unsupported_content_type to a body sent as text/plain', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('POST', '/v1/shipments', {
      body: shipmentRequest(),
      headers: { 'content-type': 'text/plain' },
    });
    expectError(response, 400, 'unsupported_content_type');
    expect(await shipmentCount(sandbox)).toBe(0);
  });

  it('answers 400 unsupported_content_type to a form body', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('POST', '/v1/shipments', {
      body: 'reference=order-1042',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectError(response, 400, 'unsupported_content_type');
  });

  it('answers 400 unsupported_content_type to a body without a content type', async () => {
    const sandbox = await createTestSandbox();
    // A string body would get text/plain from fetch; bytes get no content type at all.
    const response = await raw(sandbox, '/v1/shipments', {
      method: 'POST',
      headers: AUTH,
      body: new TextEncoder().encode(JSON.stringify(shipmentRequest())),
    });
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expectError(response, 400, 'unsupported_content_type');
    expect(await shipmentCount(sandbox)).toBe(0);
  });

  it.each(['application/json; charset=utf-8', 'application/json;charset=UTF-8', 'Application/JSON'])(
    'accepts Content-Type: %s',
    async (contentType) => {
      const sandbox = await createTestSandbox();
      const response = await sandbox.call('POST', '/v1/shipments', {
        body: shipmentRequest(),
        headers: { 'content-type': contentType },
      });
      expect(response.status, response.text).toBe(201);
      expect(await shipmentCount(sandbox)).toBe(1);
    },
  );

  it('treats an empty body as {}: 422 missing_field from', async () => {
    const sandbox = await createTestSandbox();
    expectError(await sandbox.call('POST', '/v1/shipments', { body: '' }), 422, 'missing_field', 'from');
    const none = await raw(sandbox, '/v1/shipments', { method: 'POST', headers: AUTH });
    expectError(none, 422, 'missing_field', 'from');
    expectError(await sandbox.call('POST', '/v1/shipments', { body: '  \n' }), 422, 'missing_field', 'from');
  });

  it('answers 400 request_too_large to a body over 1 MiB', async () => {
    const sandbox = await createTestSandbox();
    const body = jsonOfSize(MAX_BODY_BYTES + 1);
    expect(Buffer.byteLength(body)).toBe(1024 * 1024 + 1);

    expectError(await sandbox.call('POST', '/v1/shipments', { body }), 400, 'request_too_large');
    const declared = await sandbox.call('POST', '/v1/shipments', {
      body,
      headers: { 'content-length': String(Buffer.byteLength(body)) },
    });
    expectError(declared, 400, 'request_too_large');
    const streamed = await raw(sandbox, '/v1/shipments', {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: new Blob([body]).stream(),
      duplex: 'half',
    } as RequestInit);
    expectError(streamed, 400, 'request_too_large');
    expect(await shipmentCount(sandbox)).toBe(0);
  });

  it('answers 400 request_too_large on the open sandbox route too', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('POST', '/_sandbox/accounts', {
      key: null,
      body: jsonOfSize(MAX_BODY_BYTES + 100),
    });
    expectError(response, 400, 'request_too_large');
  });

  it('reads a body of exactly 1 MiB', async () => {
    const sandbox = await createTestSandbox();
    const body = jsonOfSize(MAX_BODY_BYTES);
    expect(Buffer.byteLength(body)).toBe(MAX_BODY_BYTES);
    // Read and validated: the body is an object without `from`.
    expectError(await sandbox.call('POST', '/v1/shipments', { body }), 422, 'missing_field', 'from');
  });
});

describe('routes', () => {
  it.each([
    ['GET', '/nope', null],
    ['GET', '/', null],
    ['GET', '/v2/shipments', null],
    ['GET', '/v2/shipments', DEFAULT_KEY],
    ['POST', '/v2/shipments', DEFAULT_KEY],
    ['GET', '/shipments', DEFAULT_KEY],
    ['GET', '/v1/nope', DEFAULT_KEY],
    ['GET', '/v1/shipments/shp_x/labels', DEFAULT_KEY],
    // A known path with another method is 405 method_not_allowed: see methods.test.ts.
  ] as const)('answers 404 route_not_found to %s %s', async (method, path, key) => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call(method, path, { key });
    const error = expectError(response, 404, 'route_not_found');
    expect(error.message).toContain(path);
  });

  it('points to the reference, and to /v1 only for a path outside it', async () => {
    const sandbox = await createTestSandbox();
    const message = async (path: string) =>
      expectError(await sandbox.call('GET', path), 404, 'route_not_found').message;
    expect(await message('/v1')).toBe(
      'No route GET /v1. The API reference at /docs (and /openapi.json) lists every route.',
    );
    expect(await message('/shipments')).toBe(
      'No route GET /shipments. Every API route is under /v1; the reference at /docs (and /openapi.json) lists every route.',
    );
  });
});

describe('a body that is not UTF-8 JSON', () => {
  it('is refused once its caller is known: journaled and counted, and a bad key is a 401 first', async () => {
    const sandbox = await createTestSandbox();
    const latin1 = new Uint8Array(Buffer.from('{"reference":"Zo\xeb"}', 'latin1'));
    const send = (key: string) =>
      sandbox.app.request('/v1/shipments', {
        method: 'POST',
        body: latin1,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      });
    const refused = await send(DEFAULT_KEY);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as any).error.code).toBe('invalid_json');
    expect(refused.headers.get('x-ratelimit-remaining')).not.toBeNull();
    const journal = (await sandbox.call('GET', '/_sandbox/requests')).json.data;
    expect(journal[0]).toMatchObject({ method: 'POST', path: '/v1/shipments', status: 400 });
    expect((await send('svc_test_0123456789abcdef0123456789abcdef')).status).toBe(401);
  });
});

describe('query parameters', () => {
  it.each([
    ['/v1/shipments?limit=5&limit=6', 'limit', 2],
    ['/v1/shipments?status=created&status=cancelled', 'status', 2],
    ['/v1/shipments?cursor=a&cursor=b&cursor=c', 'cursor', 3],
    ['/v1/shipments?carrier=ups&limit=5&carrier=ups', 'carrier', 2],
    ['/_sandbox/events?event=shipment.created&event=label.generated', 'event', 2],
    ['/_sandbox/requests?limit=1&limit=1', 'limit', 2],
  ])('answers 400 invalid_parameter to a repeated parameter: %s', async (path, field, times) => {
    const sandbox = await createTestSandbox();
    const error = expectError(await sandbox.call('GET', path), 400, 'invalid_parameter', field);
    expect(error.message).toBe(`'${field}' may be given once; it was given ${times} times.`);
  });

  it('answers 400 invalid_parameter to a repeated parameter of the keyless CDN', async () => {
    const sandbox = await createTestSandbox();
    const path = '/cdn/labels/lbl_01JD3S5Z7QK2N8W4X6Y9A0B1C2.pdf?expires=1&signature=a&signature=b';
    expectError(await sandbox.call('GET', path, { key: null }), 400, 'invalid_parameter', 'signature');
  });

  it('still reads a parameter given once beside unknown repeated ones', async () => {
    const sandbox = await createTestSandbox();
    await sandbox.newShipment();
    await sandbox.newShipment();
    const response = await sandbox.call('GET', '/v1/shipments?limit=1&utm=a&utm=b');
    expect(response.status, response.text).toBe(200);
    expect(response.json.data).toHaveLength(1);
  });
});

describe('unexpected errors', () => {
  it('answers 500 internal_error without internals, logs the stack and writes nothing', async () => {
    const sandbox = await createTestSandbox();
    await dropTable(sandbox, 'events');

    const response = await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() });

    expectError(response, 500, 'internal_error');
    expect(Object.keys(response.json)).toEqual(['error']);
    expect(Object.keys(response.json.error).sort()).toEqual(['code', 'message']);
    expect(response.text).not.toMatch(
      /events|no such table|relation|sqlite|postgres|INSERT|stack|\bat \S+ \(|\.ts\b/i,
    );

    const errors = sandbox.logLines.filter((line) => line.level === 50);
    expect(errors).toHaveLength(1);
    const err = errors[0]!.err as { stack?: string; message?: string };
    expect(err.message).toMatch(noSuchTable(sandbox, 'events'));
    expect(err.stack).toMatch(noSuchTable(sandbox, 'events'));
    expect(err.stack).toMatch(/\n\s+at /);
    expect(errors[0]).toMatchObject({ method: 'POST', path: '/v1/shipments' });

    // The shipment and its event are one transaction: the failed event took the shipment with it.
    expect(await shipmentCount(sandbox)).toBe(0);
    const listed = await sandbox.call('GET', '/v1/shipments');
    expect([listed.status, listed.json.meta.total]).toEqual([200, 0]);
  });

  it('rolls back a cancel whose event cannot be written', async () => {
    const sandbox = await createTestSandbox();
    const created = await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() });
    expect(created.status).toBe(201);
    await dropTable(sandbox, 'events');

    expectError(await sandbox.call('DELETE', `/v1/shipments/${created.json.id}`), 500, 'internal_error');

    const read = await sandbox.call('GET', `/v1/shipments/${created.json.id}`);
    expect([read.json.status, read.json.cancelled_at]).toEqual(['created', null]);
  });
});

describe('the error body', () => {
  type Case = {
    name: string;
    send: (sandbox: TestSandbox) => Promise<{ status: number; json: any; headers: Headers; text: string }>;
    status: number;
    code: string;
    field?: string;
  };
  const cases: Case[] = [
    {
      name: 'invalid_json',
      send: (s) => s.call('POST', '/v1/shipments', { body: '{' }),
      status: 400,
      code: 'invalid_json',
    },
    {
      name: 'unsupported_content_type',
      send: (s) => s.call('POST', '/v1/shipments', { body: '{}', headers: { 'content-type': 'text/csv' } }),
      status: 400,
      code: 'unsupported_content_type',
    },
    {
      name: 'invalid_parameter',
      send: (s) => s.call('GET', '/v1/shipments?limit=0'),
      status: 400,
      code: 'invalid_parameter',
      field: 'limit',
    },
    {
      name: 'request_too_large',
      send: (s) => s.call('POST', '/v1/shipments', { body: jsonOfSize(MAX_BODY_BYTES + 1) }),
      status: 400,
      code: 'request_too_large',
    },
    {
      name: 'missing_api_key',
      send: (s) => s.call('GET', '/v1/shipments', { key: null }),
      status: 401,
      code: 'missing_api_key',
    },
    {
      name: 'invalid_api_key',
      send: (s) => s.call('GET', '/v1/shipments', { key: 'svc_test_nope' }),
      status: 401,
      code: 'invalid_api_key',
    },
    {
      name: 'not_found',
      send: (s) => s.call('GET', '/v1/shipments/shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2'),
      status: 404,
      code: 'not_found',
    },
    {
      name: 'route_not_found',
      send: (s) => s.call('GET', '/v9/shipments'),
      status: 404,
      code: 'route_not_found',
    },
    {
      name: 'method_not_allowed',
      send: (s) => s.call('PUT', '/v1/shipments'),
      status: 405,
      code: 'method_not_allowed',
    },
    {
      name: 'missing_field',
      send: (s) => s.call('POST', '/v1/shipments', { body: {} }),
      status: 422,
      code: 'missing_field',
      field: 'from',
    },
    {
      name: 'invalid_field',
      send: (s) => s.call('POST', '/v1/shipments', { body: shipmentRequest({ reference: 7 }) }),
      status: 422,
      code: 'invalid_field',
      field: 'reference',
    },
    {
      name: 'invalid_address',
      send: (s) =>
        s.call('POST', '/v1/shipments', {
          body: shipmentRequest({ to: { ...shipmentRequest().to, state: 'ZZ' } }),
        }),
      status: 422,
      code: 'invalid_address',
      field: 'to.state',
    },
    {
      name: 'invalid_carrier',
      send: (s) => s.call('POST', '/v1/shipments', { body: shipmentRequest({ carrier: 'nope' }) }),
      status: 422,
      code: 'invalid_carrier',
      field: 'carrier',
    },
    {
      name: 'internal_error',
      send: async (s) => {
        await dropTable(s, 'shipments');
        return s.call('GET', '/v1/shipments');
      },
      status: 500,
      code: 'internal_error',
    },
  ];

  it.each(cases.map((c) => [c.name, c] as const))(
    '%s: application/json, exactly code, message and field only when one field is to blame',
    async (_name, { send, status, code, field }) => {
      const sandbox = await createTestSandbox();
      const response = await send(sandbox);
      expect(response.headers.get('content-type')).toMatch(/^application\/json(;|$)/);
      expect(response.status).toBe(status);
      expect(response.json).toEqual({
        error: { code, message: expect.any(String), ...(field === undefined ? {} : { field }) },
      });
      expect(Object.keys(response.json.error)).toEqual(
        field === undefined ? ['code', 'message'] : ['code', 'message', 'field'],
      );
      expect(response.json.error.message.length).toBeGreaterThan(0);
    },
  );
});
