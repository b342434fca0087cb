import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { browserSession, newFrozenAccount } from './browser.js';
import { shipmentRequest } from './helpers.js';
import { startReceiver } from './receiver.js';

/**
 * The QA dashboard in a real headless Chromium against the real server: the flows a QA person goes
 * through, by the controls' names as a person or a screen reader finds them. Every page may reach
 * the sandbox's own origin only, and any script or console error fails the test.
 */

const session = browserSession();
const { open, signedIn } = session;

async function receiver(replies: (number | { status: number; body: string })[] = [200]) {
  return session.closeAfterTest(await startReceiver(replies));
}

/** An account with a labelled shipment: what most flows start from. */
async function accountWithParcel(reference = 'order-1042') {
  const account = await newFrozenAccount(session.origin);
  const shipment = await account.api('POST', '/v1/shipments', shipmentRequest({ reference }));
  const label = await account.api('POST', '/v1/labels', { shipment_id: shipment.json.id });
  return { ...account, shipment: shipment.json, label: label.json };
}

describe('signing in', { timeout: 30_000 }, () => {
  it('takes the key from the fragment, keeps it in session storage only, and signs out', async () => {
    const account = await newFrozenAccount(session.origin, 'Fragment account');
    const page = await open(`/dashboard#key=${account.key}`);
    await page.getByText('Fragment account').first().waitFor();
    // The key left the address bar at once; the tab keeps it in session storage, nowhere else.
    expect(page.url()).toBe(`${session.origin}/dashboard`);
    expect(await page.evaluate(() => sessionStorage.getItem('shipping-sandbox.key'))).toBe(account.key);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('shipping-sandbox.key'))).toBeNull();
    await page.reload();
    await page.getByLabel('API key').waitFor();
  });

  it('prefers a key in the fragment to one kept from an earlier visit', async () => {
    const first = await newFrozenAccount(session.origin, 'First account');
    const second = await newFrozenAccount(session.origin, 'Second account');
    const page = await open(`/dashboard#key=${first.key}`);
    await page.getByText('First account').first().waitFor();
    await page.goto(`${session.origin}/dashboard#key=${second.key}`);
    await page.getByText('Second account').first().waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('shipping-sandbox.key'))).toBe(second.key);
  });

  it('signs in with a key typed in, from the keyboard alone, and refuses a wrong one', async () => {
    const account = await newFrozenAccount(session.origin, 'Typed account');
    const page = await open('/dashboard');
    const field = page.getByLabel('API key');
    await field.waitFor();
    expect(await field.evaluate((input) => input === document.activeElement)).toBe(true);

    session.expectFailedLoads(/\/_sandbox\/account$/);
    await page.keyboard.type('svc_test_not-a-key-of-this-sandbox');
    await page.keyboard.press('Enter');
    const refusal = await page.getByRole('alert').textContent();
    expect(refusal).toMatch(/does not sign in.*invalid_api_key/);

    await field.fill('');
    await page.keyboard.type(account.key);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Sign in');
    await page.keyboard.press('Enter');
    await page.getByText('Typed account').first().waitFor();
  });

  it('is sent to the dashboard from / in a browser', async () => {
    const page = await open('/');
    expect(page.url()).toBe(`${session.origin}/dashboard`);
    await page.getByLabel('API key').waitFor();
  });
});

describe('a QA session', { timeout: 30_000 }, () => {
  it('finds a shipment, forces delivered, sees the delivery, redelivers it, and the page follows by itself', async () => {
    const account = await accountWithParcel('order-7731');
    const hooks = await receiver([200]);
    await account.api('POST', '/v1/webhooks', {
      url: hooks.url,
      events: ['tracking.delivered'],
      secret: 'whsec_0123456789abcdef',
    });
    const other = await account.api('POST', '/v1/shipments', shipmentRequest({ reference: 'order-9000' }));
    const page = await signedIn(account.key);

    // Find it by its reference; the list narrows to it.
    const otherLink = page.getByRole('link', { name: other.json.id });
    await otherLink.waitFor();
    await page.getByLabel('Search').fill('order-77');
    await otherLink.waitFor({ state: 'detached' });
    const link = page.getByRole('link', { name: account.shipment.id });
    expect(await page.getByRole('link', { name: /^shp_/ }).count()).toBe(1);
    await link.click();
    await page.getByRole('heading', { name: `Shipment ${account.shipment.id}` }).waitFor();
    await page.getByText(account.label.tracking_number).first().waitFor();

    // The label is drawn inline, and downloads in its own format (through the sandbox, not its
    // pre-signed URL, a fetch the integration report would judge as the client's).
    const image = page.getByRole('img', { name: `The label of shipment ${account.shipment.id}` });
    await image.waitFor();
    await page.waitForFunction(
      () => (document.querySelector('img.label-preview') as HTMLImageElement)?.naturalWidth > 0,
    );
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download label (PDF)' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`${account.label.id}.pdf`);
    expect(
      readFileSync(await download.path())
        .subarray(0, 5)
        .toString(),
    ).toBe('%PDF-');

    // A button per status the parcel can be forced to; delivered is one of them.
    const force = page.getByRole('group', { name: 'Force a tracking status' }).getByRole('button');
    expect(await force.allTextContents()).toEqual([
      'Force accepted',
      'Force in transit',
      'Force out for delivery',
      'Force delivered',
      'Force exception',
      'Force returned',
    ]);
    const arrived = hooks.nextRequest();
    await page.getByRole('button', { name: 'Force delivered' }).click();
    await page.getByRole('cell', { name: 'delivered', exact: true }).first().waitFor();
    await page.getByText("The parcel's journey is over").waitFor();
    const delivered = await arrived;
    expect(JSON.parse(delivered.body.toString()).event).toBe('tracking.delivered');

    // The delivery, its request as sent and the receiver's answer.
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: `Deliveries to ${hooks.url}` }).waitFor();
    const deliveries = page.getByRole('table', { name: 'Every attempt, newest first' });
    const row = deliveries.getByRole('row').filter({ hasText: 'tracking.delivered' });
    await row.filter({ hasText: 'succeeded' }).first().waitFor();
    await row
      .first()
      .getByRole('button', { name: /Show details/ })
      .click();
    await page.getByText(delivered.headers['service-signature'] as string).waitFor();
    expect(await page.getByText('receiver says 200').count()).toBe(1);

    // Redeliver: a new attempt, marked so, and the receiver gets the same bytes again.
    const again = hooks.nextRequest();
    await page.getByRole('button', { name: /^Redeliver tracking\.delivered/ }).click();
    expect((await again).body.toString()).toBe(delivered.body.toString());
    await page.getByText('redelivery').first().waitFor();

    // Something done elsewhere (here, by the API) shows without a reload.
    await page.getByRole('link', { name: 'Shipments' }).click();
    await page.getByLabel('Search').fill('');
    const elsewhere = await account.api('POST', '/v1/shipments', shipmentRequest({ reference: 'elsewhere' }));
    await page.getByRole('link', { name: elsewhere.json.id }).waitFor();
  });

  it('advances, freezes and unfreezes the clock, and shows what falls due', async () => {
    const account = await accountWithParcel();
    const before = (await account.api('GET', '/_sandbox/clock')).json;
    const page = await signedIn(account.key, '#/clock');
    await page.getByRole('heading', { name: 'Account clock' }).waitFor();
    await page.getByRole('cell', { name: 'Tracking step' }).first().waitFor();

    await page.getByLabel('Advance by').fill('2h');
    await page.getByRole('button', { name: 'Advance the clock' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /items? ran on the way/ })
      .waitFor();
    const after = (await account.api('GET', '/_sandbox/clock')).json;
    expect(Date.parse(after.now) - Date.parse(before.now)).toBe(2 * 3600 * 1000);
    await page.getByText(after.now.replace('T', ' ').replace('Z', ' UTC')).first().waitFor();

    await page.getByRole('button', { name: 'Unfreeze the clock' }).click();
    await page.getByRole('button', { name: 'Freeze the clock' }).waitFor();
    expect((await account.api('GET', '/_sandbox/clock')).json.frozen).toBe(false);
    await page.getByRole('button', { name: 'Freeze the clock' }).click();
    await page.getByRole('button', { name: 'Unfreeze the clock' }).waitFor();
    expect((await account.api('GET', '/_sandbox/clock')).json.frozen).toBe(true);
  });

  it('shows a webhook marked failed, its e-mail, and re-enables it', async () => {
    const account = await accountWithParcel();
    await account.api('POST', '/_sandbox/account', { webhook_retry_schedule: [] });
    const hooks = await receiver([{ status: 500, body: 'boom' }]);
    const webhook = await account.api('POST', '/v1/webhooks', {
      url: hooks.url,
      events: ['tracking.delivered'],
      secret: 'whsec_0123456789abcdef',
    });
    const page = await signedIn(account.key, `#/webhooks/${webhook.json.id}`);
    await page.getByRole('heading', { name: `Deliveries to ${hooks.url}` }).waitFor();

    await account.api('POST', `/_sandbox/shipments/${account.shipment.id}/advance`, { status: 'delivered' });
    await page
      .getByRole('table', { name: 'Every attempt, newest first' })
      .getByRole('row')
      .filter({ hasText: 'tracking.delivered' })
      .filter({ hasText: 'failed' })
      .waitFor();
    await page.getByRole('button', { name: `Re-enable ${hooks.url}` }).click();
    await page
      .getByRole('table', { name: 'Endpoints, newest first' })
      .getByRole('row')
      .filter({ hasText: hooks.url })
      .filter({ hasText: 'active' })
      .waitFor();
    expect((await account.api('GET', `/v1/webhooks/${webhook.json.id}`)).json.status).toBe('active');

    await page.getByRole('link', { name: 'E-mail outbox' }).click();
    await page.getByRole('heading', { name: `Webhook ${webhook.json.id} was marked failed` }).waitFor();
  });

  it('works from the keyboard: tab to a button, press Enter', async () => {
    const account = await accountWithParcel();
    const page = await signedIn(account.key, `#/shipments/${account.shipment.id}`);
    await page.getByRole('button', { name: 'Force in transit' }).waitFor();
    let focused = '';
    for (let presses = 0; presses < 60 && focused !== 'Force in transit'; presses++) {
      await page.keyboard.press('Tab');
      focused = (await page.evaluate(() => document.activeElement?.textContent ?? '')).trim();
    }
    expect(focused).toBe('Force in transit');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Force out for delivery' }).waitFor();
    // The timeline lists the steps to come as well, so a cell saying "in transit" is there before the
    // press: the parcel's own status tells that Enter forced it.
    await expect
      .poll(
        async () => (await account.api('GET', `/v1/tracking/${account.label.tracking_number}`)).json.status,
      )
      .toBe('in_transit');
  });

  it('fits a phone: nothing wider than the screen, every screen reachable', async () => {
    const account = await accountWithParcel();
    const page = await signedIn(account.key, undefined, { width: 390, height: 844 });
    const link = page.getByRole('link', { name: account.shipment.id });
    await link.waitFor();
    const overflow = () =>
      page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(await overflow()).toBe(0);
    await link.click();
    await page.getByRole('button', { name: 'Force delivered' }).waitFor();
    expect(await overflow()).toBe(0);
    await page.getByRole('link', { name: 'Clock' }).click();
    await page.getByRole('button', { name: 'Advance the clock' }).waitFor();
    expect(await overflow()).toBe(0);
  });

  it('makes a restricted key, adds a fault and shows it in the journal, and has room for the report', async () => {
    const account = await accountWithParcel();
    const page = await signedIn(account.key, '#/keys');
    await page.getByLabel('Name').fill('ci-readonly');
    await page.getByRole('checkbox', { name: 'shipments:read' }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = await page
      .getByRole('status')
      .filter({ hasText: 'shown this once' })
      .locator('code')
      .textContent();
    const keys = (await account.api('GET', '/_sandbox/keys')).json.data as {
      name: string;
      scopes: string[];
      last4: string;
    }[];
    expect(keys.find((key) => key.name === 'ci-readonly')).toMatchObject({
      scopes: ['shipments:read'],
      last4: shown?.slice(-4),
    });

    await page.getByRole('link', { name: 'Faults' }).click();
    await page.getByLabel('Path').fill('/v1/rates');
    await page.getByLabel('Status', { exact: true }).fill('503');
    await page.getByRole('button', { name: 'Add fault' }).click();
    await page.getByRole('button', { name: 'Remove the fault on any /v1/rates' }).waitFor();
    const refused = await fetch(`${session.origin}/v1/rates`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(shipmentRequest()),
    });
    expect(refused.status).toBe(503);

    await page.getByRole('link', { name: 'Request journal' }).click();
    await page.getByRole('cell', { name: 'POST /v1/rates' }).first().waitFor();
    await page.getByRole('link', { name: 'Integration report' }).click();
    await page.getByRole('heading', { name: 'Integration report' }).waitFor();
    // test/dashboard-report.test.ts follows the report's evidence; here, the screen opens with its checks.
    await page.getByRole('list', { name: 'Checks' }).waitFor();
  });

  it('signs out by itself when its key is revoked', async () => {
    const account = await accountWithParcel();
    const made = await account.api('POST', '/_sandbox/keys', { name: 'short-lived' });
    const page = await signedIn(made.json.value, '#/keys');
    await page
      .getByRole('cell', { name: /short-lived/ })
      .first()
      .waitFor();
    session.expectFailedLoads(/\/_sandbox\//);
    await page.getByRole('button', { name: 'Revoke the key short-lived' }).click();
    await page.getByText(/no longer takes this key/).waitFor();
    await page.getByLabel('API key').waitFor();
  });
});
