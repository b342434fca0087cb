import { startSandbox } from 'shipping-sandbox';
import { createClient } from 'shipping-sandbox/client';
import { afterAll, expect, test } from 'vitest';

const sandbox = await startSandbox(); // a free port, in memory, an account of its own
afterAll(() => sandbox.stop());
const api = createClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey });

test('a parcel we ship can be forced to "delivered"', async () => {
  const from = { name: 'Ada', address1: '1 Market St', city: 'San Francisco', state: 'CA', zip: '94105' };
  const to = { name: 'Grace', address1: '350 5th Ave', city: 'New York', state: 'NY', zip: '10118' };
  const parcel = { weight: 1200, length: 30, width: 20, height: 10 };
  const { data: shipment, error } = await api.POST('/shipments', {
    body: { from: { ...from, country: 'US' }, to: { ...to, country: 'US' }, parcel },
  });
  if (error) throw new Error(error.error.message);
  await api.POST('/labels', { body: { shipment_id: shipment.id } });
  const tracking = await sandbox.advanceShipment(shipment.id, 'delivered');
  expect(tracking.status).toBe('delivered');
});
