import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { signedBy, startAnsweringReceiver } from './answering-receiver.js';
import { browserSession, newFrozenAccount } from './browser.js';
import { shipmentRequest } from './helpers.js';
import { openStream } from './listen-harness.js';
import { startReceiver } from './receiver.js';

/**
 * What QA does on the dashboard, in a real headless Chromium against the real server: cancels and
 * voids asked first and offered only where the API allows them, a refusal shown as an error message,
 * a probe judged as the report judges it, the faults form in line, and none of it taken for the
 * merchant's client (the request journal, the rate limits, the integration report).
 */

const session = browserSession();
const { signedIn } = session;

/** An account with a labelled shipment, its clock frozen. */
async function accountWithParcel() {
  const account = await newFrozenAccount(session.origin);
  const shipment = (await account.api('POST', '/v1/shipments', shipmentRequest())).json;
  const label = (await account.api('POST', '/v1/labels', { shipment_id: shipment.id })).json;
  return { ...account, shipment, label };
}

/** The confirmation dialog open on the page, by its question. */
const dialogAsking = (page: Page, question: string) => page.getByRole('dialog', { name: question });

describe('cancelling and voiding', { timeout: 30_000 }, () => {
  it('asks first, in a dialog whose buttons say what they do; Escape and the way out change nothing', async () => {
    const account = await accountWithParcel();
    const { shipment, label } = account;
    const page = await signedIn(account.key, `#/shipments/${shipment.id}`);
    const labelStatus = async () => (await account.api('GET', `/v1/labels/${label.id}`)).json.status;

    // The question opens on the way out, so that Enter alone destroys nothing; Escape closes it.
    await page.getByRole('button', { name: 'Void label' }).click();
    const voiding = dialogAsking(page, `Void label ${label.id}?`);
    await voiding.waitFor();
    await voiding.getByText(/is refunded/).waitFor();
    expect(await voiding.getByRole('button').allTextContents()).toEqual(['Void the label', 'Keep the label']);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Keep the label');
    await page.keyboard.press('Escape');
    await voiding.waitFor({ state: 'hidden' });
    // Focus is back on the button that asked.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Void label');
    await page.getByRole('button', { name: 'Void label' }).click();
    await voiding.getByRole('button', { name: 'Keep the label' }).click();
    await voiding.waitFor({ state: 'hidden' });
    expect(await labelStatus()).toBe('active');

    await page.getByRole('button', { name: 'Void label' }).click();
    await voiding.getByRole('button', { name: 'Void the label' }).click();
    await page.getByText('No active label.').waitFor();
    expect(await labelStatus()).toBe('voided');

    // Cancelling asks too.
    const cancelling = dialogAsking(page, `Cancel shipment ${shipment.id}?`);
    await page.getByRole('button', { name: 'Cancel shipment' }).click();
    expect(await cancelling.getByRole('button').allTextContents()).toEqual([
      'Cancel the shipment',
      'Keep the shipment',
    ]);
    await cancelling.getByRole('button', { name: 'Keep the shipment' }).click();
    await cancelling.waitFor({ state: 'hidden' });
    expect((await account.api('GET', `/v1/shipments/${shipment.id}`)).json.status).toBe('created');
    await page.getByRole('button', { name: 'Cancel shipment' }).click();
    await cancelling.getByRole('button', { name: 'Cancel the shipment' }).click();
    await page.getByText('A cancelled shipment has no parcel to track.').waitFor();
    expect((await account.api('GET', `/v1/shipments/${shipment.id}`)).json.status).toBe('cancelled');
  });

  it('offers no void for a label the carrier scanned, or one older than 30 days, and says why', async () => {
    // Scanned: an exception forced before pickup counts, as any status but pre_transit does.
    const scanned = await accountWithParcel();
    await scanned.api('POST', `/_sandbox/shipments/${scanned.shipment.id}/advance`, { status: 'exception' });
    const page = await signedIn(scanned.key, `#/shipments/${scanned.shipment.id}`);
    await page
      .getByText(/^The carrier scanned the parcel at .*: a scanned label cannot be voided\.$/)
      .waitFor();
    await page.getByRole('button', { name: 'Download label (PDF)' }).waitFor();
    expect(await page.getByRole('button', { name: 'Void label' }).count()).toBe(0);

    // Never scanned, but generated 31 days ago on the account's clock.
    const late = await accountWithParcel();
    const parcel = `/_sandbox/shipments/${late.shipment.id}`;
    expect((await late.api('POST', `${parcel}/scenario`, { name: 'stuck_pre_transit' })).status).toBe(200);
    expect((await late.api('POST', '/_sandbox/clock/advance', { by: '31d' })).status).toBe(200);
    const latePage = await signedIn(late.key, `#/shipments/${late.shipment.id}`);
    await latePage.getByText(/^The 30 days in which a label can be voided ended at /).waitFor();
    expect(await latePage.getByRole('button', { name: 'Void label' }).count()).toBe(0);
    // The shipment itself may still be cancelled (which voids the label without a refund).
    await latePage.getByRole('button', { name: 'Cancel shipment' }).waitFor();
  });

  it('shows a refusal as an error message beside its button, which keeps its size', async () => {
    const account = await accountWithParcel();
    const page = await signedIn(account.key, `#/shipments/${account.shipment.id}`);
    const button = page.getByRole('button', { name: 'Void label' });
    await button.waitFor();
    const before = await button.boundingBox();
    // The screen stops following the shipment, and the label is voided behind its back.
    await page.route(/\/_sandbox\/shipments\?q=/, () => {});
    expect((await account.api('DELETE', `/v1/labels/${account.label.id}`)).status).toBe(200);
    session.expectFailedLoads(/\/_sandbox\/labels\/lbl_/);

    await button.click();
    await dialogAsking(page, `Void label ${account.label.id}?`)
      .getByRole('button', { name: 'Void the label' })
      .click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/already voided.*\[422 label_already_voided\]$/);
    // The message is no part of the button, and the button did not grow to its width.
    expect(await button.textContent()).toBe('Void label');
    const after = await button.boundingBox();
    expect(after?.width).toBe(before?.width);
    expect(after?.height).toBe(before?.height);
    expect((await alert.boundingBox())?.y).toBeGreaterThanOrEqual((after?.y ?? 0) + (after?.height ?? 0));
  });
});

describe('the probe', { timeout: 30_000 }, () => {
  it('shows a forged delivery the receiver refused as a pass, and one it accepted as the failure', async () => {
    const account = await newFrozenAccount(session.origin);
    const secret = 'whsec_0123456789abcdef';
    const careful = session.closeAfterTest(
      await startAnsweringReceiver((request) => ({ status: signedBy(secret, request) ? 200 : 401 })),
    );
    const careless = session.closeAfterTest(await startReceiver([200]));
    const hooks = [];
    for (const receiver of [careful, careless]) {
      const hook = await account.api('POST', '/v1/webhooks', {
        url: receiver.url,
        events: ['tracking.delivered'],
        secret,
      });
      hooks.push({ id: hook.json.id as string, url: receiver.url });
    }

    for (const [hook, verdict, tone] of [
      [hooks[0], 'pass (refused)', 'status-pass'],
      [hooks[1], 'fail (accepted)', 'status-fail'],
    ] as const) {
      const page = await signedIn(account.key, `#/webhooks/${hook?.id}`);
      await page
        .getByRole('button', { name: `Probe ${hook?.url}: send a genuine and a forged delivery` })
        .click();
      const outcome = page.getByRole('status').filter({ hasText: `Probe of ${hook?.url}` });
      await outcome.waitFor();
      expect(await outcome.getAttribute('class')).toContain(
        tone === 'status-pass' ? 'verdict-pass' : 'verdict-fail',
      );
      const rows = page.getByRole('table', { name: 'Every attempt, newest first' }).getByRole('row');
      const forged = page.locator('.status', { hasText: verdict });
      await rows.filter({ hasText: 'probe, forged signature' }).filter({ has: forged }).waitFor();
      expect(await forged.getAttribute('class')).toBe(`status ${tone}`);
      // The genuine delivery is judged as any delivery is.
      await rows.filter({ hasText: 'probe, genuine signature' }).filter({ hasText: 'succeeded' }).waitFor();
    }
  });
});

describe('listen sessions', { timeout: 30_000 }, () => {
  it('lists each open session with its deliveries beside the endpoints, which it is not one of', async () => {
    const account = await newFrozenAccount(session.origin);
    const opened = await account.api('POST', '/_sandbox/listeners', {
      forward_to: 'http://localhost:3000/webhooks',
    });
    // Held by a connection, as `shipping-sandbox listen` holds it.
    const stream = await openStream(
      `${session.origin}/_sandbox/listeners/${opened.json.id}/stream`,
      account.key,
    );
    session.closeAfterTest({ close: async () => stream.close() });
    await stream.next((m) => m.event === 'ready');
    await account.api('POST', '/_sandbox/events/trigger', { event: 'label.voided' });
    const delivery = JSON.parse((await stream.next((m) => m.event === 'delivery')).data);
    await account.api('POST', `/_sandbox/listeners/${opened.json.id}/deliveries/${delivery.id}/outcome`, {
      response_status: 503,
      duration_ms: 7,
    });

    const page = await signedIn(account.key, '#/webhooks');
    const panel = page.getByRole('region', { name: 'Listen sessions' });
    await panel.getByRole('heading', { name: `http://localhost:3000/webhooks ${opened.json.id}` }).waitFor();
    await panel.getByText(/^Connected/).waitFor();
    const row = panel
      .getByRole('table', { name: `Deliveries through ${opened.json.id}, newest first` })
      .getByRole('row')
      .filter({ hasText: delivery.event_id });
    await row.filter({ hasText: 'failed' }).filter({ hasText: '503' }).waitFor();
    await page.getByText('No endpoints yet.').waitFor();
  });
});

describe('the faults form', { timeout: 30_000 }, () => {
  it('lines its fields up: every field of a row starts at the same height, hint or not', async () => {
    const account = await newFrozenAccount(session.origin);
    for (const width of [1280, 390]) {
      const page = await signedIn(account.key, '#/faults', { width, height: 900 });
      await page.getByRole('button', { name: 'Add fault' }).waitFor();
      const fields = await page
        .getByRole('form', { name: 'Add a fault' })
        .locator('.field')
        .evaluateAll((elements) =>
          elements.map((field) => ({
            label: field.querySelector('label')?.getBoundingClientRect().top ?? -1,
            control: field.querySelector('input, select')?.getBoundingClientRect().top ?? -1,
          })),
        );
      expect(fields).toHaveLength(6);
      const rows = new Map<number, number[]>();
      for (const field of fields) rows.set(field.label, [...(rows.get(field.label) ?? []), field.control]);
      // At least two fields share each row, and in each row the inputs start level.
      for (const [labelTop, controls] of rows) {
        expect([width, labelTop, controls.length >= 2]).toEqual([width, labelTop, true]);
        expect([width, labelTop, new Set(controls).size]).toEqual([width, labelTop, 1]);
      }
      if (width === 1280) expect(rows.size).toBe(1);
    }
  });
});

describe('the lists that page', { timeout: 30_000 }, () => {
  it("show every rule and webhook of an account, past the API's default page of 20", async () => {
    const account = await newFrozenAccount(session.origin);
    for (let i = 0; i < 21; i++) {
      await account.api('POST', '/_sandbox/faults', { path: `/v1/nowhere/${i}`, status: 503 });
      await account.api('POST', '/_sandbox/webhooks', {
        url: `http://127.0.0.1:9/hooks/${i}`,
        events: ['shipment.created'],
        secret: 'whsec_0123456789abcdef',
      });
    }
    const page = await signedIn(account.key, '#/faults');
    await page.getByRole('cell', { name: 'any /v1/nowhere/0', exact: true }).waitFor();
    expect(await page.getByRole('button', { name: /^Remove the fault on / }).count()).toBe(21);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('link', { name: 'http://127.0.0.1:9/hooks/0' }).waitFor();
    expect(await page.getByRole('link', { name: /^http:\/\/127\.0\.0\.1:9\/hooks\// }).count()).toBe(21);
  });
});

describe('what the dashboard does', { timeout: 60_000 }, () => {
  it("is never taken for the client's requests: no journal entry, no rate limit spent, nothing judged", async () => {
    const account = await newFrozenAccount(session.origin);
    const receiver = session.closeAfterTest(await startReceiver([200]));
    const page = await signedIn(account.key, '#/shipments');

    // A shipment made, labelled, its file downloaded, its rates read, its label voided, then cancelled.
    await page.getByRole('button', { name: 'Create a sample shipment' }).click();
    const link = page.getByRole('link', { name: /^shp_/ });
    await link.waitFor();
    await link.click();
    await page.getByRole('button', { name: 'Generate label' }).click();
    await page.locator('img.label-preview').waitFor();
    await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download label (PDF)' }).click(),
    ]);
    await page.getByRole('table', { name: /Every carrier's rate/ }).waitFor();
    await page.getByRole('button', { name: 'Void label' }).click();
    await page.getByRole('button', { name: 'Void the label' }).click();
    await page.getByText('No active label.').waitFor();
    await page.getByRole('button', { name: 'Cancel shipment' }).click();
    await page.getByRole('button', { name: 'Cancel the shipment' }).click();
    await page.getByText('A cancelled shipment has no parcel to track.').waitFor();

    // An endpoint added, disabled elsewhere, and set active again.
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByText('Add an endpoint').click();
    await page.getByLabel('URL').fill(receiver.url);
    await page.getByLabel('Signing secret').fill('whsec_0123456789abcdef');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const endpoint = page.getByRole('table', { name: 'Endpoints, newest first' }).getByRole('row');
    await endpoint.filter({ hasText: receiver.url }).waitFor();
    const [hook] = (await account.api('GET', '/_sandbox/webhooks')).json.data;
    expect((await account.api('PATCH', `/_sandbox/webhooks/${hook.id}`, { status: 'disabled' })).status).toBe(
      200,
    );
    await page.getByRole('button', { name: `Re-enable ${receiver.url}` }).click();
    await endpoint.filter({ hasText: receiver.url }).filter({ hasText: 'active' }).waitFor();

    // What happened is real: events were raised.
    const events = (await account.api('GET', '/_sandbox/events')).json.data.map(
      (e: { event: string }) => e.event,
    );
    expect(events).toEqual(
      expect.arrayContaining(['shipment.created', 'label.generated', 'label.voided', 'shipment.cancelled']),
    );
    // None of it was the client's.
    expect((await account.api('GET', '/_sandbox/requests')).json.data).toEqual([]);
    const report = (await account.api('GET', '/_sandbox/report')).json;
    expect(report.checks.map((check: { status: string }) => check.status)).toEqual(
      report.checks.map(() => 'not_observed'),
    );
    // The client's first request finds the whole minute's allowance left: of the key's 120 (the
    // tightest ceiling on the growth plan), this one is the first.
    const first = await fetch(`${session.origin}/v1/shipments`, {
      headers: { authorization: `Bearer ${account.key}` },
    });
    expect(first.headers.get('x-ratelimit-remaining')).toBe('119');
  });
});
