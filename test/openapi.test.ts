import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiDocument, type JsonSchema } from '../scripts/fuzz/document.js';
import { testConfig } from '../src/config/index.js';
import { ERROR_CODES } from '../src/core/error-codes.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { TEST_ENGINE } from './databases.js';
import { createTestSandbox, DEFAULT_KEY, expectError, type TestSandbox } from './helpers.js';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

interface DocumentedOperation {
  method: string;
  /** As the document writes it, relative to its server: `/shipments/{id}`. */
  template: string;
  /** As the server sees it: `/v1/shipments/{id}`. */
  path: string;
  operation: any;
}

/** Every operation of the document, with the path its server puts in front of it. */
function operationsOf(doc: any): DocumentedOperation[] {
  return Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([template, item]) => {
    const servers = (item.servers ?? doc.servers) as { url: string }[];
    const prefix = new URL(servers[0]?.url ?? '/', 'http://x').pathname.replace(/\/$/, '');
    return METHODS.filter((method) => item[method]).map((method) => ({
      method,
      template,
      path: `${prefix}${template}`,
      operation: item[method],
    }));
  });
}

const keyOf = (o: DocumentedOperation) => `${o.method.toUpperCase()} ${o.path}`;

/** Whether an error answer's schema is the `Error` component (narrowed or not). */
const errorRef = (schema: any) => schema.$ref ?? schema.allOf?.[0]?.$ref;

/** The codes an error response says it can carry. */
const codesOf = (response: any): string[] =>
  response.content['application/json'].schema.allOf?.[1]?.properties.error.properties.code.enum ?? [];

async function documentOf(given?: TestSandbox) {
  const sandbox = given ?? (await createTestSandbox());
  return (await sandbox.call('GET', '/openapi.json', { key: null })).json;
}

describe('/openapi.json', () => {
  it('describes every route with its security, request and error responses', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('GET', '/openapi.json', { key: null });
    expect(response.status).toBe(200);
    const doc = response.json;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });

    expect(operationsOf(doc).map(keyOf)).toEqual(
      expect.arrayContaining([
        'POST /v1/shipments',
        'GET /v1/shipments',
        'GET /v1/shipments/{id}',
        'DELETE /v1/shipments/{id}',
        'POST /v1/rates',
        'POST /_sandbox/accounts',
        'GET /_sandbox/clock',
        'POST /_sandbox/clock',
        'POST /_sandbox/clock/advance',
        'GET /_sandbox/events',
        'GET /healthz',
        'GET /openapi.json',
      ]),
    );

    const create = doc.paths['/shipments'].post;
    expect(create.security).toEqual([{ bearerAuth: [] }]);
    expect(Object.keys(create.responses)).toEqual(
      expect.arrayContaining(['201', '400', '401', '403', '422', '429']),
    );
    const body = create.requestBody.content['application/json'].schema;
    expect(body.$ref).toBe('#/components/schemas/CreateShipment');
    expect(doc.components.schemas.CreateShipment.required).toEqual(
      expect.arrayContaining(['from', 'to', 'parcel']),
    );
    expect(doc.components.schemas.Parcel.properties.weight.type).toBe('integer');
    expect(doc.components.schemas.Error.properties.error.properties).toHaveProperty('field');

    const list = doc.paths['/shipments'].get;
    expect(list.parameters.map((p: { name: string }) => p.name).sort()).toEqual([
      'carrier',
      'cursor',
      'limit',
      'status',
    ]);
  });

  it('declares security: [] on every route that takes no key, and a Bearer key on every other', async () => {
    const sandbox = await createTestSandbox();
    const doc = await documentOf(sandbox);
    expect(doc.paths['/_sandbox/accounts'].post.security).toEqual([]);
    expect(doc.paths['/cdn/labels/{file}'].get.security).toEqual([]);

    const open: string[] = [];
    for (const documented of operationsOf(doc)) {
      const { operation } = documented;
      // Never left out: a document without a top-level requirement would read that as "no key".
      expect(operation.security, keyOf(documented)).toBeDefined();
      if (operation.security.length === 0) open.push(keyOf(documented));
      else expect(operation.security, keyOf(documented)).toEqual([{ bearerAuth: [] }]);
    }
    expect(open.sort()).toEqual([
      'GET /cdn/labels/{file}',
      'GET /healthz',
      'GET /metrics',
      'GET /openapi.json',
      'POST /_sandbox/accounts',
    ]);

    // And the routes the document calls open really take no key.
    expect((await sandbox.call('POST', '/_sandbox/accounts', { key: null, body: {} })).status).toBe(201);
    const cdn = await sandbox.call('GET', '/cdn/labels/lbl_01JD3S5Z7QK2N8W4X6Y9A0B1C2.pdf', { key: null });
    expect(cdn.json.error.code).not.toMatch(/api_key/);
    expect((await sandbox.call('GET', '/healthz', { key: null })).json).toEqual({
      status: 'ok',
      database: TEST_ENGINE,
    });
  });

  it('describes 405 method_not_allowed, with its Allow header, on every operation', async () => {
    const doc = await documentOf();
    let operations = 0;
    for (const documented of operationsOf(doc)) {
      operations += 1;
      const described = documented.operation.responses['405'];
      expect(described, keyOf(documented)).toBeDefined();
      expect(described.description).toMatch(/method_not_allowed/);
      expect(described.headers.Allow.schema.type).toBe('string');
      expect(errorRef(described.content['application/json'].schema)).toBe('#/components/schemas/Error');
    }
    expect(operations).toBeGreaterThan(30);
  });

  it('renders an interactive reference at /docs', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('GET', '/docs', { key: null });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/html/);
    expect(response.text).toContain('/openapi.json');
  });

  it('gives every operation a unique camelCase operationId, a summary and a tag the document lists', async () => {
    const doc = await documentOf();
    const deliveries = Object.values(doc.webhooks as Record<string, { post: any }>).map((item) => item.post);
    const operations = [...operationsOf(doc).map((o) => o.operation), ...deliveries];
    const tags = new Set((doc.tags as { name: string }[]).map((tag) => tag.name));
    const ids = operations.map((operation) => operation.operationId);
    for (const operation of operations) {
      expect(operation.operationId).toMatch(/^[a-z][A-Za-z]+$/);
      expect(operation.summary, operation.operationId).toMatch(/\w{3}/);
      expect(operation.tags.length, operation.operationId).toBeGreaterThan(0);
      for (const tag of operation.tags) expect(tags, `${operation.operationId}: ${tag}`).toContain(tag);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(
      expect.arrayContaining([
        'createShipment',
        'listShipments',
        'getShipment',
        'cancelShipment',
        'downloadLabel',
        'advanceClock',
        'trackingDelivered',
      ]),
    );
  });

  it('describes a label download as a file in each of its formats', async () => {
    const doc = await documentOf();
    for (const route of [doc.paths['/labels/{id}/download'].get, doc.paths['/cdn/labels/{file}'].get]) {
      const content = route.responses['200'].content;
      expect(Object.keys(content).sort()).toEqual(['application/pdf', 'application/zpl', 'image/png']);
      for (const media of Object.values(content) as { schema: JsonSchema }[])
        expect(media.schema).toMatchObject({ type: 'string', format: 'binary' });
    }
  });

  it('describes limit and the other numeric query parameters as integers, and still refuses bad ones in its own words', async () => {
    const sandbox = await createTestSandbox();
    const doc = await documentOf(sandbox);
    const limits = operationsOf(doc).flatMap((o) =>
      (o.operation.parameters ?? [])
        .filter((p: { name: string }) => p.name === 'limit')
        .map((p: { schema: JsonSchema }) => [keyOf(o), p.schema] as const),
    );
    expect(limits.map(([key]) => key).sort()).toEqual([
      'GET /_sandbox/clock/due',
      'GET /_sandbox/emails',
      'GET /_sandbox/events',
      'GET /_sandbox/faults',
      'GET /_sandbox/listeners/{id}/deliveries',
      'GET /_sandbox/requests',
      'GET /_sandbox/shipments',
      'GET /_sandbox/webhooks',
      'GET /_sandbox/webhooks/{id}/deliveries',
      'GET /v1/shipments',
      'GET /v1/webhooks',
    ]);
    for (const [key, schema] of limits) {
      expect(schema, key).toMatchObject({ type: 'integer', minimum: 1 });
      expect(schema.maximum, key).toBeGreaterThanOrEqual(100);
      expect(schema.default, key).toBeLessThanOrEqual(schema.maximum as number);
    }
    // The contract's page, and every list that pages by cursor as shipments do.
    for (const path of ['/shipments', '/webhooks', '/_sandbox/webhooks', '/_sandbox/faults']) {
      const parameters: { name: string; schema: JsonSchema }[] = doc.paths[path].get.parameters;
      expect(parameters.find((p) => p.name === 'limit')?.schema, path).toMatchObject({
        maximum: 100,
        default: 20,
      });
      expect(parameters.find((p) => p.name === 'cursor')?.schema, path).toMatchObject({ type: 'string' });
    }
    const expires = doc.paths['/cdn/labels/{file}'].get.parameters.find((p: any) => p.name === 'expires');
    expect(expires.schema.type).toBe('integer');

    // The validation is the route's, unchanged: a whole number from 1 to the maximum, named in the message.
    for (const [target, bound] of [
      ['/v1/shipments?limit=abc', 100],
      ['/v1/shipments?limit=101', 100],
      ['/_sandbox/events?limit=0', 1000],
      ['/_sandbox/requests?limit=2.5', 1000],
    ] as const) {
      const error = expectError(await sandbox.call('GET', target), 400, 'invalid_parameter', 'limit');
      expect(error.message).toBe(
        `'limit' must be a whole number from 1 to ${bound}; got '${target.split('=')[1]}'.`,
      );
    }
  });

  it('enumerates, in the Error schema, exactly the codes the source answers with', async () => {
    const doc = await documentOf();
    const documented: string[] = doc.components.schemas.ErrorCode.enum;
    expect(doc.components.schemas.Error.properties.error.properties.code.$ref).toBe(
      '#/components/schemas/ErrorCode',
    );

    const thrown = thrownCodes();
    // The client has left (499) or the connection was cut (a dropped fault): nobody reads these.
    const neverRead = ['client_closed_request', 'connection_dropped'];
    expect([...thrown.keys()]).toEqual(expect.arrayContaining(neverRead));
    const answered = [...thrown.keys()].filter((code) => !neverRead.includes(code));
    expect([...documented].sort()).toEqual(answered.sort());
    // Each code under the status the source gives it (a fault's `fault_injected` has none of its own).
    for (const [code, statuses] of thrown) {
      if (neverRead.includes(code)) continue;
      for (const status of statuses)
        if (status !== undefined)
          expect([code, ERROR_CODES[code as keyof typeof ERROR_CODES].status]).toEqual([code, status]);
    }
  });

  it('names on each error response the codes it can carry, each under its own status', async () => {
    const doc = await documentOf();
    for (const documented of operationsOf(doc)) {
      for (const [status, response] of Object.entries(
        documented.operation.responses as Record<string, any>,
      )) {
        if (Number(status) < 400) continue;
        const where = `${keyOf(documented)} ${status}`;
        // The health check's 503 is its own body ({status: unavailable}), not an error.
        if (where === 'GET /healthz 503') continue;
        const codes = codesOf(response);
        expect(codes.length, where).toBeGreaterThan(0);
        for (const code of codes) {
          expect(ERROR_CODES[code as keyof typeof ERROR_CODES].status, `${where} ${code}`).toBe(
            Number(status),
          );
          expect(response.description, where).toContain(`\`${code}\``);
        }
      }
    }
    expect(codesOf(doc.paths['/labels/{id}'].delete.responses['422']).sort()).toEqual([
      'label_already_scanned',
      'label_already_voided',
      'void_window_expired',
    ]);
  });

  it("names limit_reached on exactly the routes that add to an account's capped things", async () => {
    const doc = await documentOf();
    const capped = operationsOf(doc)
      .filter(
        (o) =>
          o.operation.responses['422'] && codesOf(o.operation.responses['422']).includes('limit_reached'),
      )
      .map(keyOf)
      .sort();
    expect(capped).toEqual([
      'GET /_sandbox/requests/stream',
      'POST /_sandbox/faults',
      'POST /_sandbox/keys',
      'POST /_sandbox/listeners',
      'POST /_sandbox/webhooks',
      'POST /v1/webhooks',
    ]);
  });

  it('documents only the statuses each route can answer', async () => {
    const doc = await documentOf();
    for (const documented of operationsOf(doc)) {
      const { method, path, operation } = documented;
      const statuses = Object.keys(operation.responses);
      const has = (status: string) => statuses.includes(status);
      const key = keyOf(documented);
      const hasQuery = (operation.parameters ?? []).some((p: { in: string }) => p.in === 'query');
      const takesKey = operation.security.length > 0;

      // Rate limits are the API's alone; every route may find its database out of reach (503).
      expect([key, has('429'), has('503')]).toEqual([key, path.startsWith('/v1/'), true]);
      // Only a route that looks something up answers not_found: by its path, or by the shipment a label is for.
      expect([key, has('404')]).toEqual([
        key,
        path.includes('{') || key === 'POST /v1/labels' || key === 'POST /_sandbox/labels',
      ]);
      // A 400 needs a body to read (every POST and PATCH reads one), a query to check, or a URL that the
      // API and the controls refuse when it carries a NUL character.
      expect([key, has('400')]).toEqual([
        key,
        method === 'post' ||
          method === 'patch' ||
          hasQuery ||
          path.startsWith('/v1/') ||
          path.startsWith('/_sandbox/'),
      ]);
      // Nothing is written by a read, nor by a rate quote; but the account's listen secret is made at
      // its first read, and a listen session's stream records the connection that holds it.
      expect([key, has('507')]).toEqual([
        key,
        (method !== 'get' && !key.endsWith('/rates')) ||
          key === 'GET /_sandbox/listen-secret' ||
          key === 'GET /_sandbox/listeners/{id}/stream',
      ]);
      // A key is checked where one is asked for, and where an admin token may be.
      expect([key, has('401')]).toEqual([
        key,
        takesKey || key === 'POST /_sandbox/accounts' || key === 'GET /metrics',
      ]);
      // Any route may be refused for the host it names or for coming from another site's page.
      const forbidden = codesOf(operation.responses['403']);
      expect([key, forbidden.includes('host_not_allowed'), forbidden.includes('cross_site_request')]).toEqual(
        [key, true, true],
      );
      const keyed = forbidden.includes('insufficient_scope') || forbidden.includes('invalid_signature');
      expect([key, keyed]).toEqual([key, takesKey || path.startsWith('/cdn/')]);
      // Validation errors come only from a body the route validates.
      const validates = codesOf(
        operation.responses['422'] ?? { content: { 'application/json': { schema: {} } } },
      );
      if (validates.includes('missing_field') || validates.includes('invalid_field'))
        expect(operation.requestBody, key).toBeDefined();
    }
  });

  it('writes the API paths relative to servers (<origin>/v1), and gives every other path the bare origin', async () => {
    const sandbox = await startServer(testConfig());
    try {
      const doc = (await (await fetch(`${sandbox.origin}/openapi.json`)).json()) as any;
      expect(doc.servers).toEqual([expect.objectContaining({ url: `${sandbox.origin}/v1` })]);
      for (const [template, item] of Object.entries(doc.paths as Record<string, any>)) {
        expect(template).not.toMatch(/^\/v1\//);
        if (item.servers) {
          expect(item.servers, template).toEqual([expect.objectContaining({ url: sandbox.origin })]);
          expect(template).toMatch(/^\/(_sandbox|cdn)\/|^\/(healthz|metrics|openapi\.json)$/);
        } else expect(template).not.toMatch(/^\/(_sandbox|cdn)\//);
      }
      // The servers are where the routes are.
      const list = await fetch(`${doc.servers[0].url}/shipments`, {
        headers: { authorization: `Bearer ${DEFAULT_KEY}` },
      });
      expect(list.status).toBe(200);
      const clock = await fetch(`${doc.paths['/_sandbox/clock'].servers[0].url}/_sandbox/clock`, {
        headers: { authorization: `Bearer ${DEFAULT_KEY}` },
      });
      expect(clock.status).toBe(200);
    } finally {
      await sandbox.close();
    }
  });
});

describe('the response headers the document describes', () => {
  let sandbox: RunningSandbox;
  let doc: any;
  beforeAll(async () => {
    sandbox = await startServer(testConfig());
    doc = await (await fetch(`${sandbox.origin}/openapi.json`)).json();
  });
  afterAll(() => sandbox.close());

  const RATE_LIMIT = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];

  it('are the rate-limit headers on every /v1 answer but 401, Retry-After on 429 and 503, and neither under /_sandbox', () => {
    for (const name of RATE_LIMIT) expect(doc.components.headers[name].schema.type).toBe('integer');
    for (const documented of operationsOf(doc)) {
      const api = documented.path.startsWith('/v1/');
      for (const [status, response] of Object.entries(
        documented.operation.responses as Record<string, any>,
      )) {
        const names = Object.keys(response.headers ?? {});
        const where = `${keyOf(documented)} ${status}`;
        for (const name of RATE_LIMIT)
          expect([where, names.includes(name)]).toEqual([where, api && status !== '401']);
        if (api && status !== '401')
          expect(response.headers['X-RateLimit-Limit'].$ref).toBe('#/components/headers/X-RateLimit-Limit');
        expect([where, names.includes('Retry-After')]).toEqual([where, status === '429' || status === '503']);
      }
    }
  });

  it('are on the wire as described: on a 2xx and an error of /v1, not on a 401 nor under /_sandbox', async () => {
    const get = (path: string, key: string | null = DEFAULT_KEY) =>
      fetch(`${sandbox.origin}${path}`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
    const present = (response: Response) => RATE_LIMIT.map((name) => response.headers.get(name) !== null);

    expect(present(await get('/v1/shipments'))).toEqual([true, true, true]);
    const missing = await get('/v1/shipments/shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2');
    expect(missing.status).toBe(404);
    expect(present(missing)).toEqual([true, true, true]);
    expect(Number(missing.headers.get('X-RateLimit-Reset'))).toBeGreaterThan(Date.UTC(2020, 0, 1) / 1000);
    const anonymous = await get('/v1/shipments', null);
    expect(anonymous.status).toBe(401);
    expect(present(anonymous)).toEqual([false, false, false]);
    expect(present(await get('/_sandbox/clock'))).toEqual([false, false, false]);
  });

  it('send Retry-After with a 503 that a fault injects, as documented', async () => {
    const account = (await (
      await fetch(`${sandbox.origin}/_sandbox/accounts`, { method: 'POST' })
    ).json()) as { api_key: string };
    const headers = { authorization: `Bearer ${account.api_key}`, 'content-type': 'application/json' };
    const fault = await fetch(`${sandbox.origin}/_sandbox/faults`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ path: '/v1/rates', status: 503, retry_after: 7 }),
    });
    expect(fault.status).toBe(201);
    const refused = await fetch(`${sandbox.origin}/v1/rates`, { method: 'POST', headers, body: '{}' });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('7');
    expect(((await refused.json()) as any).error.code).toBe('service_unavailable');
    expect(codesOf(doc.paths['/rates'].post.responses['503'])).toEqual(['service_unavailable']);
  });
});

describe('the webhooks section', () => {
  it('describes the seven deliveries, their headers and bodies', async () => {
    const doc = await documentOf();
    expect(Object.keys(doc.webhooks).sort()).toEqual([
      'label.generated',
      'label.voided',
      'shipment.cancelled',
      'shipment.created',
      'tracking.delivered',
      'tracking.exception',
      'tracking.updated',
    ]);
    for (const [event, item] of Object.entries(doc.webhooks as Record<string, { post: any }>)) {
      const headers = item.post.parameters.filter((p: { in: string }) => p.in === 'header');
      expect(headers.map((h: { name: string }) => h.name).sort()).toEqual([
        'Service-Delivery-Attempt',
        'Service-Event-Id',
        'Service-Signature',
      ]);
      const schema = item.post.requestBody.content['application/json'].schema;
      const envelope = doc.components.schemas[schema.$ref.split('/').pop()];
      expect(envelope.required.sort()).toEqual(['created_at', 'data', 'event', 'id']);
      expect(envelope.properties.event.enum).toEqual([event]);
    }
    expect(doc.components.schemas.WebhookEvent.oneOf).toHaveLength(7);
  });

  it("validates every event the API records, and every sample it fires, against that event's payload", async () => {
    const sandbox = await createTestSandbox();
    const doc = await documentOf(sandbox);
    const document = new ApiDocument(doc);
    const call = async (
      method: string,
      path: string,
      body?: unknown,
      status = method === 'POST' ? 201 : 200,
    ) => {
      const response = await sandbox.call(method, path, body === undefined ? {} : { body });
      expect([method, path, response.status], response.text).toEqual([method, path, status]);
      return response.json;
    };
    const labelled = async () => {
      const shipment = await sandbox.newShipment();
      const label = await call('POST', '/v1/labels', { shipment_id: shipment.id });
      return { shipment, label };
    };

    const delivered = await labelled();
    await call('POST', `/_sandbox/shipments/${delivered.shipment.id}/advance`, { status: 'delivered' }, 200);
    const exception = await labelled();
    await call('POST', `/_sandbox/shipments/${exception.shipment.id}/advance`, { status: 'exception' }, 200);
    const voided = await labelled();
    await call('DELETE', `/v1/labels/${voided.label.id}`);
    const cancelled = await labelled();
    await call('DELETE', `/v1/shipments/${cancelled.shipment.id}`);

    const recorded = (await call('GET', '/_sandbox/events?limit=1000')).data as { event: string }[];
    expect(new Set(recorded.map((e) => e.event)).size).toBe(7);

    for (const event of Object.keys(doc.webhooks))
      recorded.push(await call('POST', '/_sandbox/events/trigger', { event }));

    for (const envelope of recorded) {
      const pointer = `#/webhooks/${envelope.event}/post/requestBody/content/application~1json/schema`;
      expect(document.validate(pointer, envelope), JSON.stringify(envelope)).toBeNull();
    }
    // A payload that is off its schema does not pass.
    const shipment = recorded.find((e) => e.event === 'shipment.created') as any;
    const broken = { ...shipment, data: { ...shipment.data, status: 'lost' } };
    expect(
      document.validate(
        '#/webhooks/shipment.created/post/requestBody/content/application~1json/schema',
        broken,
      ),
    ).not.toBeNull();
  });
});

/** Every `new ApiError(status, 'code'` in src/, and the codes a fault rule answers by default. */
function thrownCodes(): Map<string, Set<number | undefined>> {
  const found = new Map<string, Set<number | undefined>>();
  const add = (code: string, status: number | undefined) =>
    found.set(code, (found.get(code) ?? new Set()).add(status));
  const files = readdirSync('src', { recursive: true, encoding: 'utf8' }).filter(
    (file) => file.endsWith('.ts') && !file.startsWith('client'),
  );
  expect(files.length).toBeGreaterThan(100);
  for (const file of files) {
    const text = readFileSync(join('src', file), 'utf8');
    for (const [, status, code] of text.matchAll(/new ApiError\(\s*(\d+),\s*'([a-z_]+)'/g))
      add(code as string, Number(status));
  }
  const faultRules = readFileSync('src/faults/rules.ts', 'utf8');
  const defaults = /function defaultFaultCode[\s\S]*?\n}/.exec(faultRules)?.[0] ?? '';
  for (const [, code] of defaults.matchAll(/return '([a-z_]+)'/g)) add(code as string, undefined);
  expect(found.get('fault_injected')).toBeDefined();
  return found;
}
