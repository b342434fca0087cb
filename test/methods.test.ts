import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { createTestSandbox, DEFAULT_KEY, expectError, type TestSandbox } from './helpers.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

describe('a known path called with a method it does not take', () => {
  it.each([
    ['PUT', '/v1/shipments', 'GET, POST'],
    ['DELETE', '/v1/shipments', 'GET, POST'],
    ['PATCH', '/v1/shipments/shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2', 'GET, DELETE'],
    ['POST', '/v1/shipments/shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2', 'GET, DELETE'],
    ['GET', '/v1/rates', 'POST'],
    ['PUT', '/v1/webhooks/wh_01JD3S5Z7QK2N8W4X6Y9A0B1C2', 'GET, PATCH, DELETE'],
    ['DELETE', '/v1/tracking/1Z999AA10123456784', 'GET'],
    ['GET', '/_sandbox/accounts', 'POST'],
    ['DELETE', '/_sandbox/clock', 'GET, POST'],
    ['POST', '/healthz', 'GET'],
    ['POST', '/openapi.json', 'GET'],
    ['OPTIONS', '/v1/shipments', 'GET, POST'],
    ['HEAD', '/v1/rates', 'POST'],
  ])('answers 405 method_not_allowed to %s %s, with Allow: %s', async (method, path, allow) => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call(method, path);
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe(allow);
    // A HEAD answer has no body to read.
    if (method === 'HEAD') return;
    const error = expectError(response, 405, 'method_not_allowed');
    expect(error.message).toContain(method);
    expect(error.message).toContain(path);
  });

  it('answers the CDN without a key, and still 405 for another method', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('POST', '/cdn/labels/lbl_01JD3S5Z7QK2N8W4X6Y9A0B1C2.pdf', {
      key: null,
    });
    expectError(response, 405, 'method_not_allowed');
    expect(response.headers.get('allow')).toBe('GET');
  });

  it('still checks the key first under /v1, as for an unknown route', async () => {
    const sandbox = await createTestSandbox();
    expectError(await sandbox.call('PUT', '/v1/shipments', { key: null }), 401, 'missing_api_key');
  });

  it.each([
    ['PUT', '/v1/nope'],
    ['POST', '/v1/shipments/shp_x/labels'],
    ['DELETE', '/v2/shipments'],
    ['GET', '/v1/shipments/'],
    ['OPTIONS', '/nowhere'],
  ])('keeps 404 route_not_found for %s %s, a path no route has', async (method, path) => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call(method, path);
    expectError(response, 404, 'route_not_found');
    expect(response.headers.get('allow')).toBeNull();
  });

  it('agrees with the OpenAPI document on every documented path: Allow lists exactly its operations', async () => {
    const sandbox = await createTestSandbox();
    const doc = (await sandbox.call('GET', '/openapi.json', { key: null })).json;
    const paths = Object.entries(doc.paths as Record<string, Record<string, unknown>>);
    expect(paths.length).toBeGreaterThan(30);
    for (const [template, item] of paths) {
      // The API's paths are relative to the document's server (`…/v1`); the others name their own.
      const servers = (item.servers ?? doc.servers) as { url: string }[];
      const prefix = new URL(servers[0]?.url ?? '/', 'http://x').pathname.replace(/\/$/, '');
      const path = `${prefix}${template}`.replace(/\{[^}]+\}/g, 'x_01JD3S5Z7QK2N8W4X6Y9A0B1C2');
      const documented = Object.keys(item)
        .filter((key) => key !== 'servers')
        .map((m) => m.toUpperCase());
      for (const method of METHODS.filter((m) => !documented.includes(m))) {
        const response = await callAs(sandbox, method, path);
        expect([method, path, response.status], response.text).toEqual([method, path, 405]);
        const allow = response.headers.get('allow')?.split(', ') ?? [];
        expect([path, [...allow].sort()]).toEqual([path, [...documented].sort()]);
      }
    }
  });
});

/** The CDN takes no key; everything else gets the default account's. */
function callAs(sandbox: TestSandbox, method: string, path: string) {
  return sandbox.call(method, path, { key: path.startsWith('/cdn/') ? null : DEFAULT_KEY });
}

describe('405 over a real socket', () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startServer(testConfig());
  });
  afterAll(() => sandbox.close());

  it('sends Allow and the contract body on the wire, over HTTP', async () => {
    const response = await fetch(`${sandbox.origin}/v1/shipments`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${DEFAULT_KEY}` },
    });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, POST');
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('method_not_allowed');
  });
});
