import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { browserSession, guardedPage, newFrozenAccount } from './browser.js';
import { shipmentRequest } from './helpers.js';

/**
 * `/docs` in a real headless Chromium: Swagger UI served by the sandbox from its own copy, rendering
 * the OpenAPI document with every request to another host refused, and "Try it out" sending the
 * signed-in key to the sandbox, to the `/v1` routes' mount under `/_sandbox/try`, which is not the
 * merchant's client: no journal, rate limit, report or fault rule sees it.
 */

const session = browserSession({ timeoutMs: 15_000 });
const { open } = session;

/**
 * Opens an operation and tries it out: the status Swagger UI shows, the request the page sent, and the
 * curl command it shows for it.
 */
async function tryItOut(
  page: Page,
  method: string,
  path: string,
  fill: (operation: Locator) => Promise<void> = async () => {},
) {
  const operation = page.locator(`.opblock-${method}`).filter({ has: page.locator(`[data-path="${path}"]`) });
  await operation.locator('.opblock-summary').first().click();
  await operation.getByRole('button', { name: 'Try it out' }).click();
  await fill(operation);
  const last = path.split('/').pop() as string;
  const sending = page.waitForRequest((request) => {
    const sentPath = new URL(request.url()).pathname;
    return last.startsWith('{') ? sentPath.includes(path.split('/{')[0] as string) : sentPath.endsWith(path);
  });
  await operation.getByRole('button', { name: 'Execute' }).click();
  const sent = await sending;
  const status = operation.locator('.live-responses-table tbody .response-col_status').first();
  await status.waitFor();
  return {
    status: ((await status.textContent()) ?? '').trim(),
    // Where it went; its query is Swagger UI's (the parameters' defaults).
    url: sent.url().split('?')[0],
    authorization: await sent.headerValue('authorization'),
    curl: ((await operation.locator('.curl-command').textContent()) ?? '').trim(),
  };
}

/** What "Try it out" sent, and that the sandbox kept none of it as the merchant's client's. */
async function expectTriedOut(
  tried: Awaited<ReturnType<typeof tryItOut>>,
  account: Awaited<ReturnType<typeof newFrozenAccount>>,
  path: string,
) {
  expect(tried).toMatchObject({
    status: '200',
    url: `${session.origin}/_sandbox/try/v1${path}`,
    authorization: `Bearer ${account.key}`,
  });
  // Shown as an integration would send it.
  expect(tried.curl).toContain(`${session.origin}/v1${path}`);
  expect(await journal(account)).toEqual([]);
}

/** The requests to /v1 that the sandbox journaled for the account, newest first. */
async function journal(account: Awaited<ReturnType<typeof newFrozenAccount>>) {
  return (await account.api('GET', '/_sandbox/requests')).json.data as {
    method: string;
    path: string;
    status: number;
  }[];
}

describe('/docs', { timeout: 30_000 }, () => {
  it('renders every operation from the sandbox alone', async () => {
    const page = await open('/docs');
    await page.getByRole('heading', { name: /Shipping Sandbox/ }).waitFor();
    await page.locator('.opblock').first().waitFor();
    const document = (await (await fetch(`${session.origin}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
      webhooks: Record<string, Record<string, unknown>>;
    };
    // A path item also holds `servers` (the sandbox's own routes name the bare origin): count methods only.
    const methods = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);
    // Swagger UI draws the deliveries of the document's `webhooks` section as operations too.
    const operations = [...Object.values(document.paths), ...Object.values(document.webhooks)].reduce(
      (n, item) => n + Object.keys(item).filter((key) => methods.has(key)).length,
      0,
    );
    expect(operations).toBeGreaterThan(30);
    expect(await page.locator('.opblock').count()).toBe(operations);
  });

  it('tries an operation out with the key the dashboard signed in with', async () => {
    const account = await newFrozenAccount(session.origin);
    const page = await open(`/dashboard#key=${account.key}`);
    await page.getByRole('link', { name: 'API reference' }).click();
    await page.locator('.opblock').first().waitFor();
    await page
      .getByRole('status')
      .filter({ hasText: account.key.slice(-4) })
      .waitFor();

    await expectTriedOut(await tryItOut(page, 'get', '/shipments'), account, '/shipments');
    // The key went in the Authorization header only: the page's address does not hold it.
    expect(page.url()).not.toContain(account.key);
  });

  it('takes a key typed into its bar', async () => {
    const typed = await newFrozenAccount(session.origin);
    const page = await open('/docs');
    await page.locator('.opblock').first().waitFor();
    await page.getByLabel('API key for “Try it out”').fill(typed.key);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: typed.key.slice(-4) })
      .waitFor();
    await expectTriedOut(await tryItOut(page, 'get', '/shipments'), typed, '/shipments');
  });

  it("sends path parameters through, and leaves the sandbox's own routes where they are", async () => {
    const account = await newFrozenAccount(session.origin);
    const shipment = await account.api('POST', '/v1/shipments', shipmentRequest());
    const page = await open(`/docs#key=${account.key}`);
    await page.locator('.opblock').first().waitFor();
    const tried = await tryItOut(page, 'get', '/shipments/{id}', (operation) =>
      operation.getByPlaceholder('id', { exact: true }).fill(shipment.json.id),
    );
    expect(tried).toMatchObject({
      status: '200',
      url: `${session.origin}/_sandbox/try/v1/shipments/${shipment.json.id}`,
    });
    expect(tried.curl).toContain(`${session.origin}/v1/shipments/${shipment.json.id}`);
    const health = await tryItOut(page, 'get', '/healthz');
    expect(health).toMatchObject({ status: '200', url: `${session.origin}/healthz` });
    // The one request of the account's that the journal keeps: the shipment made above, through /v1.
    expect((await journal(account)).map((entry) => entry.path)).toEqual(['/v1/shipments']);
  });

  it('takes a key in the fragment, and takes it out of the address', async () => {
    const linked = await newFrozenAccount(session.origin);
    const page = await open(`/docs#key=${linked.key}`);
    await page.locator('.opblock').first().waitFor();
    expect(page.url()).not.toContain(linked.key);
    await expectTriedOut(await tryItOut(page, 'get', '/shipments'), linked, '/shipments');
  });
});

describe('the page guard', () => {
  it('catches a page that reaches for another origin (a loopback name, refused before it leaves)', async () => {
    const guarded = await guardedPage(session.browser, session.origin);
    try {
      const elsewhere = session.origin.replace('127.0.0.1', 'localhost');
      await guarded.page.goto(`${elsewhere}/healthz`).catch(() => undefined);
      expect(guarded.problems).toEqual([
        { kind: 'request elsewhere', text: `${elsewhere}/healthz`, url: `${elsewhere}/healthz` },
      ]);
    } finally {
      await guarded.context.close();
    }
  });
});
