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
    expect(doc.paths['/_sandbox/accounts'].post.security).toBeUndefined();
  });

  it('renders an interactive reference at /docs', async () => {
    const sandbox = createTestSandbox();
    const response = await sandbox.call('GET', '/docs', { key: null });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/html/);
    expect(response.text).toContain('/openapi.json');
  });
});
