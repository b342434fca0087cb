/**
 * Run by test/embed-stop.test.ts as a child process, in an empty working directory: starts two
 * sandboxes, uses every kind of resource they hold (listeners, HTTPS, the database, the scheduler,
 * webhook sends, a waiting helper), stops them, and then does nothing. If anything of them were left
 * (a timer, a socket, a worker), the process would not exit by itself.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startSandbox } from '../src/index.js';

const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(204).end());
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

const [first, second] = await Promise.all([startSandbox({ https: true }), startSandbox()]);
const call = async (path: string, body?: unknown) => {
  const response = await fetch(`${first.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${first.apiKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response;
};
const address = {
  name: 'Ada',
  address1: '417 Montgomery St',
  city: 'San Francisco',
  state: 'CA',
  zip: '94104',
  country: 'US',
};
await call('/webhooks', { url: hookUrl, events: ['tracking.delivered'], secret: 'a-secret-of-16-chars' });
const shipment = (await (
  await call('/shipments', {
    from: address,
    to: { ...address, address1: '350 5th Ave', city: 'New York', state: 'NY', zip: '10118' },
    parcel: { weight: 1200, length: 30, width: 20, height: 10 },
  })
).json()) as { id: string };
const label = (await (await call('/labels', { shipment_id: shipment.id })).json()) as { id: string };
await (await call(`/labels/${label.id}/download`)).arrayBuffer();
await first.advanceShipment(shipment.id, 'delivered');
const delivery = await first.waitForDelivery({ event: 'tracking.delivered' });
// A wait that ends by its timeout leaves nothing behind either.
const timedOut = await first.waitForDelivery({ timeout: 30 }).catch((error: Error) => error.message);
await second.clock.advance('1h');

await Promise.all([first.stop(), second.stop()]);
await new Promise<void>((resolve) => receiver.close(() => resolve()));
process.stdout.write(
  `${JSON.stringify({ delivery: delivery.status, timedOut, https: first.https?.origin, left: process.getActiveResourcesInfo() })}\n`,
);
