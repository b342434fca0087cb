/**
 * A merchant's test with Vitest: one sandbox for the file, started in-process on a free port and
 * stopped at the end. It buys a label, forces the parcel to "delivered", and waits for the
 * `tracking.delivered` webhook to reach the merchant's own handler (here a small local server).
 *
 *   npm install --save-dev shipping-sandbox vitest
 *   npx vitest run
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Sandbox, startSandbox } from 'shipping-sandbox';
import { afterAll, beforeAll, expect, test } from 'vitest';

const WEBHOOK_SECRET = 'whsec_example-secret-for-tests';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox.stop());

/** The shipping API, as the merchant's code calls it. */
async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${sandbox.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${sandbox.apiKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** The merchant's webhook handler: keeps what it receives. */
async function startWebhookHandler() {
  const received: { headers: IncomingHttpHeaders; body: Buffer }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks/shipping`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const signatureOf = (body: Buffer) =>
  `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex')}`;

test('a delivered parcel reaches our webhook handler, signed', async () => {
  const handler = await startWebhookHandler();
  try {
    await api('POST', '/webhooks', {
      url: handler.url,
      events: ['tracking.delivered'],
      secret: WEBHOOK_SECRET,
    });
    const shipment = await api<{ id: string }>('POST', '/shipments', {
      from: {
        name: 'Ada Lovelace',
        address1: '417 Montgomery St',
        city: 'San Francisco',
        state: 'CA',
        zip: '94104',
        country: 'US',
      },
      to: {
        name: 'Grace Hopper',
        address1: '350 5th Ave',
        city: 'New York',
        state: 'NY',
        zip: '10118',
        country: 'US',
      },
      parcel: { weight: 1200, length: 30, width: 20, height: 10 },
    });
    const label = await api<{ tracking_number: string }>('POST', '/labels', { shipment_id: shipment.id });

    await sandbox.advanceShipment(shipment.id, 'delivered');
    const delivery = await sandbox.waitForDelivery({ event: 'tracking.delivered' });

    expect(delivery.status).toBe('succeeded');
    // Our handler got the event once, signed with our secret over the exact bytes sent.
    expect(handler.received.map(({ body }) => JSON.parse(body.toString('utf8')))).toMatchObject([
      {
        id: delivery.event_id,
        event: 'tracking.delivered',
        data: { tracking_number: label.tracking_number },
      },
    ]);
    for (const { headers, body } of handler.received)
      expect(headers['service-signature']).toBe(signatureOf(body));
  } finally {
    await handler.close();
  }
});
