import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTestSandbox, shipmentRequest } from './helpers.js';

/**
 * ICU's data and code sit in node's binary, and whatever of them a process touches stays resident:
 * number formatting kept 6.8 MiB more, Unicode normalisation 1.4 (measured with
 * `bench/memory-breakdown.ts`). The API's everyday requests need neither.
 */
describe("the API's everyday requests", () => {
  afterEach(() => vi.restoreAllMocks());

  it('leave ICU alone: no locale formatting, collation or normalisation of ASCII', async () => {
    const sandbox = await createTestSandbox();
    const key = await sandbox.newAccount('growth');
    const icu = [
      vi.spyOn(Number.prototype, 'toLocaleString'),
      vi.spyOn(String.prototype, 'normalize'),
      vi.spyOn(String.prototype, 'localeCompare'),
      vi.spyOn(Intl, 'NumberFormat'),
      vi.spyOn(Intl, 'Collator'),
    ];
    const created = await sandbox.call('POST', '/v1/shipments', { key, body: shipmentRequest() });
    expect(created.status).toBe(201);
    expect((await sandbox.call('GET', `/v1/shipments/${created.json.id}`, { key })).status).toBe(200);
    expect((await sandbox.call('GET', '/v1/shipments?limit=5', { key })).status).toBe(200);
    const { from, to, parcel } = shipmentRequest();
    expect((await sandbox.call('POST', '/v1/rates', { key, body: { from, to, parcel } })).status).toBe(200);
    for (const spy of icu) expect(spy).not.toHaveBeenCalled();

    // A postcode typed on a Japanese keyboard is still normalised.
    const fullWidth = await sandbox.call('POST', '/v1/shipments', {
      key,
      body: shipmentRequest({
        to: {
          name: 'Sato',
          address1: '1-1 Chiyoda',
          city: 'Tokyo',
          state: 'Tokyo',
          zip: '１００−０００１',
          country: 'JP',
        },
      }),
    });
    expect(fullWidth.status).toBe(201);
    expect(icu[1]).toHaveBeenCalled();
  });
});
