import { describe, expect, it } from 'vitest';
import { createTestSandbox } from './helpers.js';

describe('/openapi.json', () => {
  it('describes every route with its security, request and error responses', async () => {
    const sandbox = createTestSandbox();
    const response = await sandbox.call('GET', '/openapi.json', { key: null });
    expect(response.status).toBe(200);
    const doc = response.json;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });

    const operations = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(operations).toEqual(
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
      ]),
    );

    const create = doc.paths['/v1/shipments'].post;
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

    const list = doc.paths['/v1/shipments'].get;
    expect(list.parameters.map((p: { name: string }) => p.name).sort()).toEqual([
      'carrier',
      'cursor',
      'limit',
      'status',
    ]);
  });

  it('declares security: [] on every route that takes no key, and a Bearer key on every other', async () => {
    const sandbox = createTestSandbox();
    const doc = (await sandbox.call('GET', '/openapi.json', { key: null })).json;
    expect(doc.paths['/_sandbox/accounts'].post.security).toEqual([]);
    expect(doc.paths['/cdn/labels/{file}'].get.security).toEqual([]);

    const open: string[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(item)) {
        // Never left out: a document without a top-level requirement would read that as "no key".
        expect(operation.security, `${method} ${path}`).toBeDefined();
        if (operation.security.length === 0) open.push(`${method.toUpperCase()} ${path}`);
        else expect(operation.security, `${method} ${path}`).toEqual([{ bearerAuth: [] }]);
      }
    }
    expect(open.sort()).toEqual(['GET /cdn/labels/{file}', 'POST /_sandbox/accounts']);

    // And the routes the document calls open really take no key.
    expect((await sandbox.call('POST', '/_sandbox/accounts', { key: null, body: {} })).status).toBe(201);
    const cdn = await sandbox.call('GET', '/cdn/labels/lbl_01JD3S5Z7QK2N8W4X6Y9A0B1C2.pdf', { key: null });
    expect(cdn.json.error.code).not.toMatch(/api_key/);
  });

  it('describes 405 method_not_allowed, with its Allow header, on every operation', async () => {
    const sandbox = createTestSandbox();
    const doc = (await sandbox.call('GET', '/openapi.json', { key: null })).json;
    let operations = 0;
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(item)) {
        operations += 1;
        const described = operation.responses['405'];
        expect(described, `${method} ${path}`).toBeDefined();
        expect(described.description).toMatch(/method_not_allowed/);
        expect(described.headers.Allow.schema.type).toBe('string');
        expect(described.content['application/json'].schema.$ref).toBe('#/components/schemas/Error');
      }
    }
    expect(operations).toBeGreaterThan(30);
  });

  it('renders an interactive reference at /docs', async () => {
    const sandbox = createTestSandbox();
    const response = await sandbox.call('GET', '/docs', { key: null });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/html/);
    expect(response.text).toContain('/openapi.json');
  });
});
