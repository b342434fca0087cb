/**
 * `npm run screenshots`: the README's pictures of the dashboard, taken from the real thing. Starts a
 * sandbox in memory, gives an account a little history (shipments along their journeys, a webhook
 * with a failed and a successful delivery, one marked failed and its e-mail, and last a client that
 * retries a 429 at once and a receiver that takes a forged delivery, for the integration report), and
 * photographs the main screens at 1280×800 and one at a phone's width into docs/screenshots/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import {
  chromiumMissing,
  guardedPage,
  launchChromium,
  newFrozenAccount,
  startTestServer,
} from '../test/browser.js';
import { shipmentRequest } from '../test/helpers.js';
import { startReceiver } from '../test/receiver.js';

const OUT = join(import.meta.dirname, '..', 'docs', 'screenshots');

const missing = chromiumMissing();
if (missing) {
  process.stderr.write(`${missing}\n`);
  process.exit(1);
}

mkdirSync(OUT, { recursive: true });
const server = await startTestServer();
const browser = await launchChromium();
const steady = await startReceiver([{ status: 500, body: '{"error":"database locked"}' }, 200]);
const broken = await startReceiver([{ status: 503, body: 'maintenance' }]);

try {
  const account = await newFrozenAccount(server.origin, 'Acme Outfitters (QA)');
  const { api } = account;
  // One retry a minute after a failure, and a webhook that fails for good after it.
  await api('POST', '/_sandbox/account', { webhook_retry_schedule: [60] });
  const orders = await api('POST', '/v1/webhooks', {
    url: steady.url,
    events: ['tracking.delivered', 'tracking.exception'],
    secret: 'whsec_screenshots-orders-service',
  });
  await api('POST', '/v1/webhooks', {
    url: broken.url,
    events: ['tracking.exception'],
    secret: 'whsec_screenshots-legacy-hook',
  });

  const ship = async (reference: string, to: Record<string, string> | undefined, status?: string) => {
    const shipment = (
      await api('POST', '/v1/shipments', shipmentRequest({ reference, ...(to ? { to } : {}) }))
    ).json as { id: string };
    if (status === 'created') return shipment.id;
    await api('POST', '/v1/labels', { shipment_id: shipment.id, format: 'pdf' });
    if (status) await api('POST', `/_sandbox/shipments/${shipment.id}/advance`, { status });
    return shipment.id;
  };
  const chicago = {
    name: 'Katherine Johnson',
    address1: '233 S Wacker Dr',
    city: 'Chicago',
    state: 'IL',
    zip: '60606',
    country: 'US',
  };
  await ship('order-1039', undefined, 'delivered');
  await ship('order-1040', chicago, 'exception');
  await ship('order-1041', undefined, 'created');
  const featured = await ship('order-1042', undefined, 'in_transit');
  await ship('order-1043', chicago, 'accepted');
  // The retries fall due a minute later on the account's clock: the steady receiver takes the retry.
  await api('POST', '/_sandbox/clock/advance', { by: '2m' });
  await api('POST', '/_sandbox/clock/advance', { by: '2m' });

  const shoot = async (page: Page, name: string) => {
    await page.waitForLoadState('networkidle');
    await page.screenshot({ path: join(OUT, `${name}.png`) });
    process.stdout.write(`docs/screenshots/${name}.png\n`);
  };
  const open = async (hash: string, viewport = { width: 1280, height: 800 }) => {
    const guarded = await guardedPage(browser, server.origin, viewport);
    const { page } = guarded;
    await page.goto(`${server.origin}/dashboard#key=${account.key}`);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.evaluate((to) => {
      window.location.hash = to;
    }, hash);
    return { ...guarded, page };
  };

  const shots: {
    hash: string;
    name: string;
    ready: (page: Page) => Promise<unknown>;
    viewport?: { width: number; height: number };
    /** What the account does first (after the shots before it, which it would change). */
    before?: () => Promise<unknown>;
  }[] = [
    {
      hash: '#/shipments',
      name: 'shipments',
      ready: (page) => page.getByRole('link', { name: featured }).waitFor(),
    },
    {
      hash: `#/shipments/${featured}`,
      name: 'shipment',
      ready: (page) => page.locator('img.label-preview').waitFor(),
    },
    {
      hash: '#/clock',
      name: 'clock',
      ready: (page) => page.getByRole('cell', { name: 'Tracking step' }).first().waitFor(),
    },
    {
      hash: `#/webhooks/${orders.json.id}`,
      name: 'webhooks',
      ready: async (page) => {
        // The first try, which the receiver answered 500, in full; its retry succeeded above it.
        await page
          .getByRole('button', { name: /Show details/ })
          .nth(2)
          .click();
        await page.getByText('service-signature').waitFor();
        await page.evaluate(() => document.getElementById('deliveries-title')?.scrollIntoView());
      },
    },
    {
      hash: '#/outbox',
      name: 'outbox',
      ready: (page) => page.getByRole('heading', { level: 2 }).first().waitFor(),
    },
    {
      hash: `#/shipments/${featured}`,
      name: 'shipment-phone',
      viewport: { width: 390, height: 844 },
      ready: (page) => page.getByRole('button', { name: 'Force delivered' }).waitFor(),
    },
    {
      hash: '#/report',
      name: 'report',
      before: async () => {
        // A 429 that asked for 30 s, retried at once; the probe finds the steady receiver takes forgeries.
        await api('POST', '/_sandbox/faults', {
          method: 'GET',
          path: '/v1/shipments',
          status: 429,
          retry_after: 30,
          times: 1,
        });
        await api('GET', '/v1/shipments?limit=1');
        await api('GET', '/v1/shipments?limit=1');
        await api('POST', `/_sandbox/webhooks/${orders.json.id}/probe`);
      },
      ready: (page) => page.getByRole('heading', { name: 'Verdict: fail' }).waitFor(),
    },
  ];
  for (const shot of shots) {
    await shot.before?.();
    const { context, page, problems } = await open(shot.hash, shot.viewport);
    await shot.ready(page);
    await shoot(page, shot.name);
    if (problems.length > 0)
      throw new Error(`the ${shot.name} screen had problems: ${JSON.stringify(problems)}`);
    await context.close();
  }

  const docs = await guardedPage(browser, server.origin);
  await docs.page.goto(`${server.origin}/docs#key=${account.key}`);
  await docs.page.locator('.opblock').first().waitFor();
  await shoot(docs.page, 'docs');
  await docs.context.close();
} finally {
  await browser.close();
  await Promise.all([steady.close(), broken.close()]);
  await server.close();
}
