import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { evidenceLink } from '../src/dashboard/ui/evidence.js';
import { hrefOf, parseRoute, type Route, sectionOf } from '../src/dashboard/ui/routes.js';
import { browserSession, newFrozenAccount } from './browser.js';
import { shipmentRequest } from './helpers.js';
import { startReceiver } from './receiver.js';
import { elementsNamed, parseXml } from './xml.js';

/**
 * The integration report's screen in a real headless Chromium against the real server: a careless
 * client (a 429 retried at once, a receiver that answers 500 and checks no signature, a label URL
 * fetched after it expired) seen as failing checks, and their evidence followed to where each
 * request, delivery and label lives in the dashboard. Pages may reach the sandbox's origin only, and
 * any script or console error fails the test.
 */

const session = browserSession();
const { signedIn } = session;

/** The panel of one check, found by its title. */
const checkPanel = (page: Page, title: string) =>
  page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: title }) });

/**
 * A careless client's account: a 429 retried at once, and a webhook whose receiver answers the first
 * delivery 500 and then 200 to anything, signed or not.
 */
async function carelessAccount() {
  const account = await newFrozenAccount(session.origin, 'Careless client');
  const receiver = session.closeAfterTest(await startReceiver([500, 200]));
  const hook = await account.api('POST', '/v1/webhooks', {
    url: receiver.url,
    events: ['tracking.delivered'],
    secret: 'whsec_careless-0123456789',
  });
  expect(hook.status).toBe(201);
  const fault = await account.api('POST', '/_sandbox/faults', {
    method: 'GET',
    path: '/v1/shipments',
    status: 429,
    retry_after: 30,
    times: 1,
  });
  expect(fault.status).toBe(201);
  expect((await account.api('GET', '/v1/shipments')).status).toBe(429);
  // At once, not 30 s later.
  expect((await account.api('GET', '/v1/shipments')).status).toBe(200);
  expect(
    (await account.api('POST', '/_sandbox/events/trigger', { event: 'tracking.delivered' })).status,
  ).toBe(201);
  // The delivery falls due now: moving the clock by nothing sends it, and answers once it has its outcome.
  expect((await account.api('POST', '/_sandbox/clock/advance', { by: 0 })).status).toBe(200);
  return { ...account, webhookId: hook.json.id as string, receiver };
}

describe('the integration report screen', { timeout: 60_000 }, () => {
  it('shows a careless client failing, with evidence that links to the request journal and the delivery log', async () => {
    const account = await carelessAccount();
    const report = (await account.api('GET', '/_sandbox/report')).json;
    const early = report.checks.find((check: { id: string }) => check.id === 'respects_retry_after');
    expect(early.status).toBe('fail');
    const retried = early.evidence.at(-1) as { id: string };

    const page = await signedIn(account.key, '#/report');
    await page.getByRole('heading', { name: 'Verdict: fail' }).waitFor();
    // Each check's status is written out in its heading, not shown by colour alone.
    const retryAfter = checkPanel(page, 'fail Waits for Retry-After after a 429');
    await retryAfter.getByText(/Called again .* after a 429 that asked to wait 30 s/).waitFor();
    await checkPanel(page, 'fail Answers every webhook delivery with a 2xx').waitFor();
    await checkPanel(page, 'not observed Refuses webhook deliveries with a wrong signature').waitFor();
    await checkPanel(page, 'pass Calls only with keys that are valid').waitFor();
    expect(
      await page
        .getByRole('listitem')
        .filter({ has: page.getByRole('heading', { level: 2 }) })
        .count(),
    ).toBe(9);

    // A failing check's evidence is open, each line with both clocks and a link to its request.
    const link = retryAfter.getByRole('link', { name: `View request ${retried.id} in the journal` });
    await expect(link.isVisible()).resolves.toBe(true);
    await expect(retryAfter.getByText(/by the wall clock/).count()).resolves.toBe(early.evidence.length);
    await link.click();
    await page.getByRole('heading', { name: 'Request journal' }).waitFor();
    expect(new URL(page.url()).hash).toBe(`#/requests/${retried.id}`);
    const marked = page.locator('tr[aria-current="true"]');
    await expect(marked.textContent()).resolves.toMatch(/GET \/v1\/shipments.*200/);
    await page.getByText(retried.id, { exact: true }).waitFor();
    expect(await marked.evaluate((row) => row.id)).toBe(`request-${retried.id}`);

    // Back on the report: the failed delivery, followed to its attempt in the webhook's delivery log.
    await page.goBack();
    const delivery = checkPanel(page, 'fail Answers every webhook delivery with a 2xx').getByRole('link', {
      name: /^View delivery dlv_/,
    });
    const deliveryId = ((await delivery.textContent()) ?? '').replace('View delivery ', '');
    await delivery.click();
    await page.getByRole('heading', { name: `Deliveries to ${account.receiver.url}` }).waitFor();
    expect(new URL(page.url()).hash).toBe(`#/webhooks/${account.webhookId}/${deliveryId}`);
    const attempt = page.locator('tr[aria-current="true"]');
    await expect(attempt.textContent()).resolves.toContain('500');
    // Its details are open: the request as sent.
    await page.getByRole('button', { name: `Hide details of ${deliveryId}` }).waitFor();
    await page.getByText('service-signature').waitFor();

    // The probe from the webhooks screen: the receiver takes the forged delivery too.
    await page
      .getByRole('button', { name: `Probe ${account.receiver.url}: send a genuine and a forged delivery` })
      .click();
    await page.getByText('It does not verify signatures: it accepted the forged delivery as well.').waitFor();
    await page.getByRole('link', { name: 'View the integration report' }).click();
    const signatures = checkPanel(page, 'fail Refuses webhook deliveries with a wrong signature');
    await signatures
      .getByRole('link', { name: /^View delivery dlv_/ })
      .first()
      .waitFor();
  });

  it('downloads the report as JUnit XML, fetched with the key', async () => {
    const account = await carelessAccount();
    const page = await signedIn(account.key, '#/report');
    await page.getByRole('heading', { name: 'Verdict: fail' }).waitFor();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download JUnit XML' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`shipping-sandbox-report-${account.id}.xml`);
    const xml = parseXml(readFileSync(await download.path(), 'utf8'));
    const cases = elementsNamed(xml, 'testcase');
    expect(cases).toHaveLength(9);
    const failed = cases.filter((testCase) => elementsNamed(testCase, 'failure').length > 0);
    expect(failed.map((testCase) => testCase.attributes.name).sort()).toEqual([
      'respects_retry_after',
      'webhook_handler_succeeds',
    ]);
  });

  it('links an expired label URL to its shipment', async () => {
    const account = await newFrozenAccount(session.origin, 'Late printer');
    const shipment = (await account.api('POST', '/v1/shipments', shipmentRequest())).json;
    const label = (await account.api('POST', '/v1/labels', { shipment_id: shipment.id })).json;
    // A label URL lasts 7 days.
    expect((await account.api('POST', '/_sandbox/clock/advance', { by: '8d' })).status).toBe(200);
    expect((await fetch(label.label_url)).status).toBe(403);

    const journaled = (await account.api('GET', '/_sandbox/requests')).json.data.length;

    const page = await signedIn(account.key, '#/report');
    const check = checkPanel(page, 'fail Fetches label URLs only while they are valid');
    const link = check.getByRole('link', { name: `View the shipment of label ${label.id}` });
    // The evidence names the shipment: the link goes straight there.
    expect(await link.getAttribute('href')).toBe(`#/shipments/${shipment.id}`);
    await link.click();
    await page.getByRole('heading', { name: `Shipment ${shipment.id}` }).waitFor();
    expect(new URL(page.url()).hash).toBe(`#/shipments/${shipment.id}`);
    await page.goBack();
    await page.getByRole('heading', { name: /^Verdict:/ }).waitFor();
    // Nothing the dashboard did on the way was one of the client's requests.
    expect((await account.api('GET', '/_sandbox/requests')).json.data).toHaveLength(journaled);
  });

  it('says what a clean account has not shown yet, and fits a phone', async () => {
    const account = await newFrozenAccount(session.origin, 'Fresh client');
    const page = await signedIn(account.key, '#/report', { width: 390, height: 844 });
    await page.getByRole('heading', { name: 'Verdict: not observed' }).waitFor();
    const signatures = checkPanel(page, 'not observed Refuses webhook deliveries with a wrong signature');
    await signatures.getByRole('link', { name: 'Webhooks screen' }).waitFor();
    expect(await page.locator('details').count()).toBe(0);
    expect(
      await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth),
    ).toBe(0);

    // Live: a request made now shows without a reload (the dashboard polls every two seconds).
    expect((await account.api('GET', '/v1/shipments')).status).toBe(200);
    await checkPanel(page, 'pass Calls only with keys that are valid').waitFor();
  });

  it('says so when a linked request has left the journal', async () => {
    const account = await newFrozenAccount(session.origin, 'Forgetful');
    const page = await signedIn(account.key, '#/requests/req_01JD0000000000000000000000');
    await page.getByText(/Request req_01JD0000000000000000000000 is no longer in the journal/).waitFor();
  });
});

describe('the links the report makes', () => {
  it('round-trip through the fragment', () => {
    const routes: Route[] = [
      { screen: 'requests', id: 'req_01JD3S5Z7QK2N8W4X6Y9A0B1C2' },
      { screen: 'webhooks', id: 'wh_01JD3S5Z7QK2N8W4X6Y9A0B1C2', delivery: 'dlv_01JD3S5Z7QK2N8W4X6Y9A0B1C3' },
      { screen: 'shipment', id: 'shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2' },
    ];
    for (const route of routes) expect(parseRoute(hrefOf(route))).toEqual(route);
    expect(sectionOf({ screen: 'shipment', id: 'shp_1' })).toBe('shipments');
    // Anything but identifiers after the screen's name names no one thing.
    expect(parseRoute('#/requests/<img>')).toEqual({ screen: 'requests' });
    expect(parseRoute('#/webhooks/wh_1/dlv_1/x')).toEqual({ screen: 'webhooks' });
    expect(parseRoute('#/shipments/shp_1/x')).toEqual({ screen: 'shipments' });
  });

  it('go from each kind of evidence to where it lives', () => {
    const at = { at: null, wall_at: null, detail: '' };
    expect(evidenceLink({ kind: 'request', id: 'req_1', ...at }).href).toBe('#/requests/req_1');
    expect(evidenceLink({ kind: 'delivery', id: 'dlv_1', webhook_id: 'wh_1', ...at }).href).toBe(
      '#/webhooks/wh_1/dlv_1',
    );
    expect(evidenceLink({ kind: 'label_url', id: 'lbl_1', shipment_id: 'shp_1', ...at })).toEqual({
      href: '#/shipments/shp_1',
      text: 'View the shipment of label lbl_1',
    });
  });
});
