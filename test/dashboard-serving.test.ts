import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { BUILD_OPTIONS, dashboardBundle } from '../src/dashboard/bundle.js';
import { BUILT_SWAGGER_UI, SWAGGER_FILES, swaggerFiles } from '../src/dashboard/swagger.js';
import { startServer } from '../src/server.js';
import { createTestSandbox, DEFAULT_KEY, expectError } from './helpers.js';

/** How the sandbox serves the dashboard, its assets and the reference: no key, nothing from elsewhere. */

describe('GET /dashboard', () => {
  it('serves the page with a policy that lets it reach the sandbox only', async () => {
    const sandbox = await createTestSandbox();
    const page = await sandbox.call('GET', '/dashboard', { key: null });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const policy = page.headers.get('content-security-policy') ?? '';
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("connect-src 'self'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    // Everything it loads is relative to it: the sandbox's own, under any path a proxy gives it.
    const loads = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]);
    expect(loads).toEqual([
      'dashboard/assets/icon.svg',
      'dashboard/assets/app.css',
      'docs',
      'dashboard/assets/app.js',
    ]);
    expect(page.text).not.toMatch(/https?:\/\//);
  });

  it('serves the bundled script and style, revalidated by their tags', async () => {
    const sandbox = await createTestSandbox();
    const script = await sandbox.call('GET', '/dashboard/assets/app.js', { key: null });
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script.text.length).toBeGreaterThan(10_000);
    // Nothing in the bundle names another host for the page to load.
    expect(script.text).not.toMatch(/https?:\/\/(?!www\.w3\.org\/)[a-z]/i);
    const etag = script.headers.get('etag') as string;
    const again = await sandbox.call('GET', '/dashboard/assets/app.js', {
      key: null,
      headers: { 'if-none-match': etag },
    });
    expect([again.status, again.text]).toEqual([304, '']);

    const style = await sandbox.call('GET', '/dashboard/assets/app.css', { key: null });
    expect([style.status, style.headers.get('content-type')]).toEqual([200, 'text/css; charset=utf-8']);
    const icon = await sandbox.call('GET', '/dashboard/assets/icon.svg', { key: null });
    expect([icon.status, icon.headers.get('content-type')]).toEqual([200, 'image/svg+xml']);
  });

  it('answers the contract’s 404 for a file it does not have, and 405 for another method', async () => {
    const sandbox = await createTestSandbox();
    for (const path of ['/dashboard/assets/nope.js', '/dashboard/assets/..%2F..%2Fpackage.json']) {
      expectError(await sandbox.call('GET', path, { key: null }), 404, 'not_found');
    }
    const posted = await sandbox.call('POST', '/dashboard', { key: null, body: {} });
    expectError(posted, 405, 'method_not_allowed');
  });
});

describe('GET /', () => {
  it('sends a browser to the dashboard', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('GET', '/', {
      key: null,
      headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
    });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('dashboard');
  });

  it.each([
    ['GET', 'application/json'],
    ['GET', '*/*'],
    ['POST', 'text/html'],
    ['DELETE', 'text/html'],
  ])('keeps 404 route_not_found for %s / with Accept %s', async (method, accept) => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call(method, '/', { key: null, headers: { accept } });
    expectError(response, 404, 'route_not_found');
    expect(response.headers.get('allow')).toBeNull();
  });
});

describe('GET /dashboard/ and /docs/', () => {
  it('redirect to the pages, by a relative Location that keeps the query, over a real socket', async () => {
    const server = await startServer(testConfig(), undefined, { https: false });
    try {
      for (const page of ['dashboard', 'docs']) {
        const moved = await fetch(`${server.origin}/${page}/?from=banner`, { redirect: 'manual' });
        expect(moved.status).toBe(301);
        expect(moved.headers.get('location')).toBe(`../${page}?from=banner`);
        // A relative Location resolves against the path it was asked for, under any prefix.
        expect(new URL(`../${page}`, `http://proxy.test/sandbox/${page}/`).pathname).toBe(`/sandbox/${page}`);

        const followed = await fetch(`${server.origin}/${page}/`);
        expect(followed.status).toBe(200);
        expect(new URL(followed.url).pathname).toBe(`/${page}`);
        expect(followed.headers.get('content-type')).toBe('text/html; charset=utf-8');
      }
      // Only those two: an API path with a trailing slash is still no route.
      const api = await fetch(`${server.origin}/v1/shipments/`, {
        headers: { authorization: `Bearer ${DEFAULT_KEY}` },
        redirect: 'manual',
      });
      expect(api.status).toBe(404);
      expect(((await api.json()) as { error: { code: string } }).error.code).toBe('route_not_found');
    } finally {
      await server.close();
    }
  });
});

describe('GET /docs', () => {
  it('serves the reference page and its own copy of Swagger UI', async () => {
    const sandbox = await createTestSandbox();
    const page = await sandbox.call('GET', '/docs', { key: null });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("connect-src 'self'");
    expect(page.text).not.toMatch(/https?:\/\//);
    const bundle = await sandbox.call('GET', '/docs/assets/swagger-ui-bundle.js', { key: null });
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(bundle.text).toContain('SwaggerUIBundle');
    const style = await sandbox.call('GET', '/docs/assets/swagger-ui.css', { key: null });
    expect(style.status).toBe(200);
    const script = await sandbox.call('GET', '/dashboard/assets/docs.js', { key: null });
    expect(script.status).toBe(200);
  });

  // The package ships the build's copy (swagger-ui-dist is a development dependency only).
  it('serves the same Swagger UI from the build as from swagger-ui-dist', async () => {
    const fromBuild = swaggerFiles({ fromSources: false, builtDir: BUILT_SWAGGER_UI });
    const fromPackage = swaggerFiles({ fromSources: true });
    for (const name of SWAGGER_FILES) {
      const built = await fromBuild(name);
      expect(built?.bytes.length, `npm test builds dist/ first: ${name}`).toBeGreaterThan(1000);
      expect(built?.etag).toBe((await fromPackage(name))?.etag);
    }
    expect(existsSync(join(BUILT_SWAGGER_UI, 'LICENSE'))).toBe(true);
  });

  it('serves nothing else of the package', async () => {
    const sandbox = await createTestSandbox();
    for (const name of ['package.json', 'index.js', 'swagger-ui-bundle.js.map', 'oauth2-redirect.html']) {
      expectError(await sandbox.call('GET', `/docs/assets/${name}`, { key: null }), 404, 'not_found');
    }
  });
});

describe('the bundle', () => {
  const built = mkdtempSync(join(tmpdir(), 'sandbox-dashboard-'));
  afterAll(() => rmSync(built, { recursive: true, force: true }));

  it('is the same files built by the build script as bundled in memory from the sources', async () => {
    // What scripts/build.mjs does, into a folder of this test's own.
    await build({ ...JSON.parse(readFileSync(BUILD_OPTIONS, 'utf8')), outdir: built });
    const fromBuild = await dashboardBundle({ fromSources: false, builtDir: built })();
    const inMemory = await dashboardBundle({ fromSources: true })();
    expect([...fromBuild.keys()].sort()).toEqual(['app.css', 'app.js', 'docs.css', 'docs.js']);
    for (const [name, file] of inMemory) expect([name, file.etag]).toEqual([name, fromBuild.get(name)?.etag]);
  });

  it('says how to build it when it is missing', async () => {
    const missing = dashboardBundle({ fromSources: false, builtDir: join(built, 'nowhere') });
    await expect(missing()).rejects.toThrow(/not built.*npm run build/);
  });
});
