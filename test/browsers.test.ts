import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Config, testConfig } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { chromiumMissing, launchChromium } from './browser.js';
import { runCli } from './cli-harness.js';
import { shipmentRequest } from './helpers.js';

/**
 * What web pages can do to a sandbox through a browser, over real sockets on loopback: the `Host`
 * a loopback sandbox takes (DNS rebinding), requests a browser marks cross-site, `nosniff`, and the
 * dashboard, the reference and the command line still working beside them.
 */

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: any;
}

/** A request with a `Host` of our choosing (fetch sets its own), over HTTP or, with `ca`, HTTPS. */
function call(
  origin: string,
  path: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    ca?: Buffer;
    /** The request target as sent, when not `path` (an absolute-form one). */
    target?: string;
  } = {},
): Promise<Answer> {
  const url = new URL(path, origin);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      {
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port,
        path: options.target ?? `${url.pathname}${url.search}`,
        method: options.method ?? 'GET',
        headers: options.headers,
        ...(options.ca ? { ca: options.ca, servername: 'localhost' } : {}),
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => {
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

async function newAccount(origin: string): Promise<string> {
  const created = await call(origin, '/_sandbox/accounts', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  expect(created.status).toBe(201);
  return created.json.api_key;
}

/** A new shipment's PNG label: its pre-signed URL. */
async function pngLabelUrl(origin: string, key: string): Promise<string> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const shipment = await call(origin, '/v1/shipments', {
    method: 'POST',
    headers,
    body: JSON.stringify(shipmentRequest()),
  });
  const label = await call(origin, '/v1/labels', {
    method: 'POST',
    headers,
    body: JSON.stringify({ shipment_id: shipment.json.id, format: 'png' }),
  });
  return label.json.label_url;
}

const servers: RunningSandbox[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});
async function serve(overrides: Partial<Config> = {}): Promise<RunningSandbox> {
  const server = await startServer(testConfig(overrides));
  servers.push(server);
  return server;
}

describe('the Host a sandbox on loopback answers', () => {
  let sandbox: RunningSandbox;
  let port: string;
  beforeAll(async () => {
    sandbox = await serve({ allowedHosts: ['sandbox.test'] });
    port = new URL(sandbox.origin).port;
  });

  it.each([
    'localhost',
    'LOCALHOST',
    'localhost.',
    'app.localhost',
    '127.0.0.1',
    '127.1.2.3',
    '[::1]',
    'sandbox.test',
  ])('answers Host %s, with and without the port', async (host) => {
    for (const value of [host, `${host}:${port}`]) {
      const answer = await call(sandbox.origin, '/healthz', { headers: { host: value } });
      expect([value, answer.status]).toEqual([value, 200]);
    }
  });

  it.each([
    // What a browser sends once a page's own name has been re-pointed at 127.0.0.1.
    'rebind.attacker.example',
    '127.0.0.1.nip.io',
    'localhost.attacker.example',
    'sandbox.test.attacker.example',
    '0.0.0.0',
    '[::]',
    '10.0.0.5',
  ])('refuses Host %s with 403 host_not_allowed, on every route and both ports', async (host) => {
    const ca = readFileSync(sandbox.certificatePath);
    for (const [origin, path, method] of [
      [sandbox.origin, '/healthz', 'GET'],
      [sandbox.origin, '/_sandbox/accounts', 'POST'],
      [sandbox.origin, '/v1/shipments', 'GET'],
      [sandbox.origin, '/dashboard', 'GET'],
      [sandbox.httpsOrigin, '/healthz', 'GET'],
    ] as const) {
      const answer = await call(origin, path, {
        method,
        headers: { host: `${host}:${port}` },
        ...(origin === sandbox.httpsOrigin ? { ca } : {}),
      });
      expect([path, answer.status, answer.json?.error?.code]).toEqual([path, 403, 'host_not_allowed']);
      expect(answer.headers['content-type']).toBe('application/json');
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.json.error.message).toContain('--allowed-host');
    }
  });

  it('checks an absolute-form target too', async () => {
    const answer = await call(sandbox.origin, '/healthz', {
      target: `http://rebind.attacker.example:${port}/healthz`,
      headers: { host: `127.0.0.1:${port}` },
    });
    // The client asked for the attacker's name, whatever its Host header says.
    expect([answer.status, answer.json.error.code]).toEqual([403, 'host_not_allowed']);
  });

  it('listens on the IPv6 loopback too, and answers [::1] there', async () => {
    const six = await serve({ host: '::1' });
    expect(six.origin).toMatch(/^http:\/\/\[::1\]:\d+$/);
    const sixPort = new URL(six.origin).port;
    expect((await call(six.origin, '/healthz', { headers: { host: `[::1]:${sixPort}` } })).status).toBe(200);
    const refused = await call(six.origin, '/healthz', {
      headers: { host: `rebind.attacker.example:${sixPort}` },
    });
    expect([refused.status, refused.json.error.code]).toEqual([403, 'host_not_allowed']);
  });

  it('checks no Host off loopback: a shared deployment is reached by its own names', async () => {
    const shared = await serve({ host: '0.0.0.0' });
    const answer = await call(shared.origin, '/healthz', { headers: { host: 'sandbox.ci.internal:4010' } });
    expect(answer.status).toBe(200);
  });
});

describe('requests a browser marks cross-site', () => {
  let sandbox: RunningSandbox;
  let key: string;
  let labelPath: string;
  beforeAll(async () => {
    sandbox = await serve();
    key = await newAccount(sandbox.origin);
    const url = new URL(await pngLabelUrl(sandbox.origin, key));
    labelPath = `${url.pathname}${url.search}`;
  });

  const accountCount = () => sandbox.sandbox.db.value('SELECT count(*) FROM accounts');

  it('are refused with 403 cross_site_request: no account made by a body-less POST', async () => {
    const before = await accountCount();
    const refused = await call(sandbox.origin, '/_sandbox/accounts', {
      method: 'POST',
      headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' },
    });
    expect([refused.status, refused.json.error.code]).toEqual([403, 'cross_site_request']);
    expect(refused.headers['x-content-type-options']).toBe('nosniff');
    expect(await accountCount()).toBe(before);

    for (const [method, path] of [
      ['GET', '/v1/shipments'],
      ['GET', '/_sandbox/account'],
      ['GET', '/dashboard'],
      ['HEAD', labelPath],
      ['POST', labelPath],
    ] as const) {
      const answer = await call(sandbox.origin, path, {
        method,
        headers: { authorization: `Bearer ${key}`, 'sec-fetch-site': 'Cross-Site' },
      });
      expect([method, path, answer.status]).toEqual([method, path, 403]);
      if (method !== 'HEAD') expect(answer.json.error.code).toBe('cross_site_request');
    }
  });

  it('let a label file through GET, and every request of the same site or of no browser', async () => {
    const label = await call(sandbox.origin, labelPath, { headers: { 'sec-fetch-site': 'cross-site' } });
    expect([label.status, label.headers['content-type']]).toEqual([200, 'image/png']);
    expect(label.headers['x-content-type-options']).toBe('nosniff');
    // A changed URL is still judged by its signature, not let through as a label file.
    const altered = await call(sandbox.origin, labelPath.replace(/expires=(\d+)/, 'expires=0$1'), {
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    expect([altered.status, altered.json.error.code]).toEqual([403, 'invalid_signature']);

    for (const site of ['same-origin', 'same-site', 'none', undefined]) {
      const created = await call(sandbox.origin, '/_sandbox/accounts', {
        method: 'POST',
        headers: site === undefined ? {} : { 'sec-fetch-site': site },
      });
      expect([site, created.status]).toEqual([site, 201]);
    }
  });
});

describe('X-Content-Type-Options: nosniff', () => {
  it('is on every JSON answer: success, error, no route, wrong method, and parser refusals', async () => {
    const sandbox = await serve();
    const key = await newAccount(sandbox.origin);
    for (const [method, path, auth] of [
      ['GET', '/healthz', false],
      ['GET', '/openapi.json', false],
      ['GET', '/v1/shipments', true],
      ['GET', '/v1/shipments', false],
      ['GET', '/v1/shipments/shp_nope', true],
      ['GET', '/nowhere', false],
      ['PUT', '/healthz', false],
      ['POST', '/_sandbox/clock/advance', true],
    ] as const) {
      const answer = await call(sandbox.origin, path, {
        method,
        headers: auth ? { authorization: `Bearer ${key}` } : {},
      });
      expect([method, path, answer.headers['content-type']]).toEqual([
        method,
        path,
        expect.stringMatching(/^application\/json/),
      ]);
      expect([method, path, answer.headers['x-content-type-options']]).toEqual([method, path, 'nosniff']);
    }
  });
});

describe('webhook URLs', () => {
  it('are held to 2048 characters once percent-encoded, as they are stored and requested', async () => {
    const sandbox = await serve();
    const key = await newAccount(sandbox.origin);
    const register = (url: string) =>
      call(sandbox.origin, '/v1/webhooks', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url, events: ['tracking.updated'], secret: 'a-secret-of-sixteen-or-more' }),
      });
    // 1,020 characters as sent, 6,000 and more once each é is %C3%A9.
    const refused = await register(`https://hooks.example.com/${'é'.repeat(1000)}`);
    expect([refused.status, refused.json.error.code, refused.json.error.field]).toEqual([
      422,
      'invalid_field',
      'url',
    ]);
    expect(refused.json.error.message).toContain('percent-encoded');
    const ascii = await register(`https://hooks.example.com/${'a'.repeat(2000)}`);
    expect(ascii.status).toBe(201);
    expect(ascii.json.url.length).toBeLessThanOrEqual(2048);
  });
});

describe('in a real browser', { timeout: 60_000 }, () => {
  let browser: Browser;
  let sandbox: RunningSandbox;
  let page: Server;
  let pageOrigin: string;
  beforeAll(async () => {
    const missing = chromiumMissing();
    if (missing) throw new Error(missing);
    // A name that resolves to 127.0.0.1 in this browser alone: DNS rebinding without a DNS server.
    browser = await launchChromium(['--host-resolver-rules=MAP rebind.attacker.example 127.0.0.1']);
    sandbox = await serve();
    // Another site's page: another loopback address is another site.
    page = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>another site</title>');
    });
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.2', resolve));
    pageOrigin = `http://127.0.0.2:${(page.address() as AddressInfo).port}`;
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => page?.close(resolve));
  });

  it('opens the dashboard and the reference at localhost, and signs in', async () => {
    const key = await newAccount(sandbox.origin);
    const origin = sandbox.origin.replace('127.0.0.1', 'localhost');
    const context = await browser.newContext();
    try {
      const tab = await context.newPage();
      await tab.goto(`${origin}/dashboard#key=${key}`);
      await tab.getByRole('button', { name: 'Sign out' }).waitFor();
      await tab.goto(`${origin}/docs/`);
      expect(new URL(tab.url()).pathname).toBe('/docs');
      await tab.locator('.swagger-ui .info').waitFor();
    } finally {
      await context.close();
    }
  });

  it('opens the dashboard on the IPv6 loopback', async () => {
    const six = await serve({ host: '::1' });
    const key = await newAccount(six.origin);
    const context = await browser.newContext();
    try {
      const tab = await context.newPage();
      await tab.goto(`${six.origin}/dashboard#key=${key}`);
      await tab.getByRole('button', { name: 'Sign out' }).waitFor();
    } finally {
      await context.close();
    }
  });

  it('refuses the sandbox to a page whose name was re-pointed at it', async () => {
    const context = await browser.newContext();
    try {
      const tab = await context.newPage();
      const port = new URL(sandbox.origin).port;
      const response = await tab.goto(`http://rebind.attacker.example:${port}/dashboard`);
      expect(response?.status()).toBe(403);
      expect(JSON.parse((await response?.text()) ?? '{}').error.code).toBe('host_not_allowed');
    } finally {
      await context.close();
    }
  });

  it("lets another site's page make no account, but show a label image", async () => {
    const labelUrl = await pngLabelUrl(sandbox.origin, await newAccount(sandbox.origin));
    const count = () => sandbox.sandbox.db.value('SELECT count(*) FROM accounts');
    const before = await count();

    const context = await browser.newContext();
    try {
      const tab = await context.newPage();
      await tab.goto(pageOrigin);
      const outcome = await tab.evaluate(
        async ({ target, labelUrl }) => {
          // What any page can send without CORS: a body-less POST, and a form-like one.
          await fetch(`${target}/_sandbox/accounts`, { method: 'POST', mode: 'no-cors' }).catch(() => {});
          await fetch(`${target}/_sandbox/accounts`, {
            method: 'POST',
            mode: 'no-cors',
            headers: { 'content-type': 'text/plain' },
            body: '{}',
          }).catch(() => {});
          const image = new Image();
          image.src = labelUrl;
          await image.decode();
          return { width: image.naturalWidth };
        },
        { target: sandbox.origin, labelUrl },
      );
      expect(outcome.width).toBeGreaterThan(100);
      expect(await count()).toBe(before);
    } finally {
      await context.close();
    }
  });
});

describe('the command line', () => {
  it('works against a loopback sandbox by its name', async () => {
    const sandbox = await serve();
    const key = await newAccount(sandbox.origin);
    const origin = sandbox.origin.replace('127.0.0.1', 'localhost');
    const run = await runCli(origin, ['clock', '--json'], { SHIPPING_SANDBOX_KEY: key });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ frozen: false });
  });
});
