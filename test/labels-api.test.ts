import { PDFDocument } from 'pdf-lib';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import { LabelFiles } from '../src/labels/files.js';
import { createLabelRenderer } from '../src/labels/render/pool.js';
import { carrierOfTrackingNumber } from '../src/labels/tracking-number.js';
import { createTestSandbox, expectError, type TestSandbox, US_DESTINATION } from './helpers.js';

async function labelFor(sandbox: TestSandbox, body: Record<string, unknown> = {}, shipmentOverrides = {}) {
  const shipment = await sandbox.newShipment(shipmentOverrides);
  const response = await sandbox.call('POST', '/v1/labels', { body: { shipment_id: shipment.id, ...body } });
  expect(response.status).toBe(201);
  return { shipment, label: response.json };
}

/** The path and query of a pre-signed URL, to call the in-process app with. */
const pathOf = (url: string) => {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
};

async function frozenSandbox() {
  const sandbox = await createTestSandbox();
  await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
  return sandbox;
}

describe('POST /v1/labels', () => {
  it('creates a pdf 4x6 label by default and moves the shipment to label_generated', async () => {
    const sandbox = await frozenSandbox();
    const { shipment, label } = await labelFor(sandbox);
    expect(Object.keys(label).sort()).toEqual(
      [
        'carrier',
        'created_at',
        'expires_at',
        'format',
        'id',
        'label_url',
        'shipment_id',
        'status',
        'tracking_number',
      ].sort(),
    );
    expect(label).toMatchObject({
      shipment_id: shipment.id,
      carrier: shipment.carrier,
      format: 'pdf',
      status: 'active',
      created_at: '2026-11-22T08:00:00Z',
      expires_at: '2026-11-29T08:00:00Z',
    });
    expect(label.id).toMatch(/^lbl_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(carrierOfTrackingNumber(label.tracking_number)).toBe(shipment.carrier);
    const expires = Date.UTC(2026, 10, 29, 8) / 1000;
    expect(label.label_url).toMatch(
      new RegExp(
        `^http://localhost/cdn/labels/${label.id}\\.pdf\\?expires=${expires}&signature=[0-9a-f]{64}$`,
      ),
    );

    const after = (await sandbox.call('GET', `/v1/shipments/${shipment.id}`)).json;
    expect(after).toMatchObject({
      status: 'label_generated',
      label_id: label.id,
      tracking_number: label.tracking_number,
    });
    const events = (await sandbox.call('GET', '/_sandbox/events?event=label.generated')).json.data;
    expect(events).toHaveLength(1);
    expect(events[0].data).toEqual(label);
  });

  it('uses the configured CDN origin', async () => {
    const sandbox = await createTestSandbox({ cdnUrl: 'https://cdn.example.test/sandbox' });
    const { label } = await labelFor(sandbox);
    expect(label.label_url.startsWith('https://cdn.example.test/sandbox/labels/')).toBe(true);
  });

  it.each([
    [{ format: 'gif' }, 'invalid_field', 'format'],
    [{ size: '5x7' }, 'invalid_field', 'size'],
    [{ format: 3 }, 'invalid_field', 'format'],
    [{ dpi: 300 }, 'invalid_field', 'dpi'],
  ])('refuses %j', async (body, code, field) => {
    const sandbox = await createTestSandbox();
    const shipment = await sandbox.newShipment();
    const response = await sandbox.call('POST', '/v1/labels', {
      body: { shipment_id: shipment.id, ...body },
    });
    expectError(response, 422, code, field);
    expect((await sandbox.call('GET', `/v1/shipments/${shipment.id}`)).json.status).toBe('created');
  });

  it('needs a shipment_id of an existing shipment of the account', async () => {
    const sandbox = await createTestSandbox();
    expectError(await sandbox.call('POST', '/v1/labels', { body: {} }), 422, 'missing_field', 'shipment_id');
    expectError(
      await sandbox.call('POST', '/v1/labels', { body: { shipment_id: 'shp_nope' } }),
      404,
      'not_found',
    );
    const other = await sandbox.newAccount();
    const foreign = await sandbox.newShipment({}, other);
    expectError(
      await sandbox.call('POST', '/v1/labels', { body: { shipment_id: foreign.id } }),
      404,
      'not_found',
    );
  });

  it('refuses a cancelled shipment and a second active label', async () => {
    const sandbox = await createTestSandbox();
    const { shipment } = await labelFor(sandbox);
    expectError(
      await sandbox.call('POST', '/v1/labels', { body: { shipment_id: shipment.id } }),
      422,
      'label_already_exists',
      'shipment_id',
    );
    const cancelled = await sandbox.newShipment();
    await sandbox.call('DELETE', `/v1/shipments/${cancelled.id}`);
    expectError(
      await sandbox.call('POST', '/v1/labels', { body: { shipment_id: cancelled.id } }),
      422,
      'shipment_cancelled',
      'shipment_id',
    );
  });

  it('gives every label its own tracking number in its carrier format', async () => {
    const sandbox = await createTestSandbox();
    const numbers = new Set<string>();
    for (const carrier of ['usps', 'ups', 'fedex', 'dhl_express']) {
      const { label } = await labelFor(sandbox, {}, { carrier });
      expect(label.carrier).toBe(carrier);
      expect(carrierOfTrackingNumber(label.tracking_number)).toBe(carrier);
      numbers.add(label.tracking_number);
    }
    expect(numbers.size).toBe(4);
  });
});

describe('label files', () => {
  it('downloads each format with its type, name and page size', async () => {
    const sandbox = await createTestSandbox();
    const pdf = (await labelFor(sandbox, { format: 'pdf', size: '4x8' })).label;
    const download = await sandbox.call('GET', `/v1/labels/${pdf.id}/download`);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('application/pdf');
    expect(download.headers.get('content-disposition')).toBe(`attachment; filename="${pdf.id}.pdf"`);
    const document = await PDFDocument.load(download.bytes);
    expect(document.getPage(0).getSize()).toEqual({ width: 288, height: 576 });

    const png = (await labelFor(sandbox, { format: 'png' })).label;
    const image = await sandbox.call('GET', `/v1/labels/${png.id}/download`);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(image.headers.get('content-disposition')).toBe(`attachment; filename="${png.id}.png"`);
    const decoded = PNG.sync.read(Buffer.from(image.bytes));
    expect([decoded.width, decoded.height]).toEqual([812, 1218]);

    const zpl = (await labelFor(sandbox, { format: 'zpl', size: 'letter' })).label;
    const text = await sandbox.call('GET', `/v1/labels/${zpl.id}/download`);
    expect(text.headers.get('content-type')).toBe('application/zpl');
    expect(text.text.startsWith('^XA')).toBe(true);
    expect(text.text).toContain(zpl.tracking_number);
  });

  // Once answered 500: the MaxiCode encoder refused the city ("secondary message is too long").
  // test/labels-any-address.test.ts tries every accepted address; this is the one that was reported.
  it('downloads the label of a UPS shipment whose name, street and city are long and full of symbols', async () => {
    const sandbox = await createTestSandbox();
    // Braces, brackets and the like between the symbol's own characters take two codewords each.
    const symbols = '#{!}%|&~*^@[]/<"\\>'.repeat(6);
    const to = {
      ...US_DESTINATION,
      name: `${symbols}Grace`.slice(0, 100),
      address1: `${symbols}350 5th Ave`.slice(0, 100),
      city: `${symbols}New York`.slice(0, 100),
    };
    for (const format of ['pdf', 'png', 'zpl'] as const) {
      const { label } = await labelFor(sandbox, { format }, { carrier: 'ups', to });
      expect(label.carrier).toBe('ups');
      const download = await sandbox.call('GET', `/v1/labels/${label.id}/download`);
      expect(download.status, download.text.slice(0, 200)).toBe(200);
      if (format === 'pdf') expect((await PDFDocument.load(download.bytes)).getPageCount()).toBe(1);
      if (format === 'png') expect(PNG.sync.read(Buffer.from(download.bytes)).width).toBe(812);
      if (format === 'zpl') expect(download.text).toContain(label.tracking_number);
    }
  });

  it('renders the same bytes again after the cache is gone', async () => {
    const sandbox = await createTestSandbox();
    const { label } = await labelFor(sandbox, { format: 'png' });
    const first = (await sandbox.call('GET', `/v1/labels/${label.id}/download`)).bytes;
    // A fresh cache, as after a restart: the file is rendered again from the label and its shipment.
    const record = (await sandbox.stores.labels.find(sandbox.db, DEFAULT_ACCOUNT.id, label.id))!;
    const shipment = (await sandbox.stores.shipments.find(
      sandbox.db,
      DEFAULT_ACCOUNT.id,
      record.shipmentId,
    ))!;
    const second = (await new LabelFiles(createLabelRenderer(0)).get(record, shipment)).bytes;
    expect(Buffer.from(second).equals(Buffer.from(first))).toBe(true);
  });

  it('reads labels only within their account', async () => {
    const sandbox = await createTestSandbox();
    const { label } = await labelFor(sandbox);
    expect((await sandbox.call('GET', `/v1/labels/${label.id}`)).json).toEqual(label);
    const other = await sandbox.newAccount();
    expectError(await sandbox.call('GET', `/v1/labels/${label.id}`, { key: other }), 404, 'not_found');
    expectError(
      await sandbox.call('GET', `/v1/labels/${label.id}/download`, { key: other }),
      404,
      'not_found',
    );
    expectError(await sandbox.call('DELETE', `/v1/labels/${label.id}`, { key: other }), 404, 'not_found');
  });
});

describe('pre-signed label URLs', () => {
  it('work without a key until expires_at on the account clock, then answer 403 url_expired', async () => {
    const sandbox = await frozenSandbox();
    const { label } = await labelFor(sandbox);
    const fresh = await sandbox.call('GET', pathOf(label.label_url), { key: null });
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('content-type')).toBe('application/pdf');

    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: 7 * 86_400 - 1 } });
    expect((await sandbox.call('GET', pathOf(label.label_url), { key: null })).status).toBe(200);
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '1s' } });
    expectError(await sandbox.call('GET', pathOf(label.label_url), { key: null }), 403, 'url_expired');
  });

  it('answer 403 invalid_signature when any part is changed', async () => {
    const sandbox = await createTestSandbox();
    const { label } = await labelFor(sandbox);
    const path = pathOf(label.label_url);
    const lastHex = path.at(-1) === '0' ? '1' : '0';
    const variants = [
      `${path.slice(0, -1)}${lastHex}`,
      path.replace(/expires=(\d+)/, (_m, n) => `expires=${Number(n) + 86_400}`),
      path.replace('.pdf?', '.png?'),
      path.replace(/&signature=[0-9a-f]+/, ''),
      path.replace(/expires=\d+&/, ''),
      path.replace(label.id, `${label.id.slice(0, -1)}${label.id.endsWith('0') ? '1' : '0'}`),
      // The same instant in other spellings is not the URL that was signed.
      path.replace(/expires=(\d+)/, 'expires=0$1'),
      path.replace(/expires=(\d+)/, 'expires=000$1'),
      path.replace(/expires=(\d+)/, 'expires=%2B$1'),
      path.replace(/expires=(\d+)/, 'expires=$1.0'),
      path.replace(/expires=(\d+)/, (_m, n) => `expires=${Number(n) / 1e9}e9`),
    ];
    for (const variant of variants) {
      expectError(await sandbox.call('GET', variant, { key: null }), 403, 'invalid_signature');
    }
  });
});

describe('DELETE /v1/labels/:id', () => {
  it('voids, refunds the rate in 14 days, and moves the shipment back to created', async () => {
    const sandbox = await frozenSandbox();
    const { shipment, label } = await labelFor(sandbox);
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '1h' } });
    const voided = await sandbox.call('DELETE', `/v1/labels/${label.id}`);
    expect(voided.status).toBe(200);
    expect(voided.json).toEqual({
      id: label.id,
      status: 'voided',
      refund: {
        amount: shipment.rate.amount,
        currency: shipment.rate.currency,
        estimated_at: '2026-12-06T09:00:00Z',
      },
    });
    expect((await sandbox.call('GET', `/v1/shipments/${shipment.id}`)).json).toMatchObject({
      status: 'created',
      label_id: null,
      tracking_number: null,
    });
    expect((await sandbox.call('GET', `/v1/labels/${label.id}`)).json.status).toBe('voided');
    const events = (await sandbox.call('GET', '/_sandbox/events?event=label.voided')).json.data;
    expect(events.map((e: { data: unknown }) => e.data)).toEqual([
      { ...voided.json, shipment_id: shipment.id },
    ]);

    expectError(await sandbox.call('DELETE', `/v1/labels/${label.id}`), 422, 'label_already_voided');
    const again = await sandbox.call('POST', '/v1/labels', { body: { shipment_id: shipment.id } });
    expect(again.status).toBe(201);
    expect(again.json.tracking_number).not.toBe(label.tracking_number);
  });

  it('refuses after the 30-day window', async () => {
    const sandbox = await frozenSandbox();
    // A parcel never handed to the carrier: the label stays unscanned, so only the window decides.
    await sandbox.call('POST', '/_sandbox/account', { body: { default_scenario: 'stuck_pre_transit' } });
    const { label } = await labelFor(sandbox);
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '30d' } });
    const atLimit = await labelFor(sandbox);
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '1d' } });
    expectError(await sandbox.call('DELETE', `/v1/labels/${label.id}`), 422, 'void_window_expired');
    expect((await sandbox.call('DELETE', `/v1/labels/${atLimit.label.id}`)).status).toBe(200);
  });

  it('refuses a label the carrier has scanned', async () => {
    const sandbox = await createTestSandbox();
    const { label } = await labelFor(sandbox);
    await sandbox.stores.labels.markScanned(sandbox.db, label.id, sandbox.wall.now);
    expectError(await sandbox.call('DELETE', `/v1/labels/${label.id}`), 422, 'label_already_scanned');
    expect((await sandbox.call('GET', `/v1/labels/${label.id}`)).json.status).toBe('active');
  });

  it('is what cancelling a label_generated shipment does first', async () => {
    const sandbox = await frozenSandbox();
    const { shipment, label } = await labelFor(sandbox);
    const cancelled = await sandbox.call('DELETE', `/v1/shipments/${shipment.id}`);
    expect(cancelled.json).toEqual({
      id: shipment.id,
      status: 'cancelled',
      cancelled_at: '2026-11-22T08:00:00Z',
    });
    const events = (await sandbox.call('GET', '/_sandbox/events')).json.data.map(
      (e: { event: string }) => e.event,
    );
    expect(events.slice(0, 2)).toEqual(['shipment.cancelled', 'label.voided']);
    expect((await sandbox.call('GET', `/v1/labels/${label.id}`)).json.status).toBe('voided');
    expectError(await sandbox.call('DELETE', `/v1/labels/${label.id}`), 422, 'label_already_voided');
  });
});
