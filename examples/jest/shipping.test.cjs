/**
 * A merchant's test with Jest, in plain CommonJS (no transform): one sandbox for the file, started
 * in-process on a free port and stopped at the end. It buys a label, forces the parcel to
 * "delivered", and waits for the `tracking.delivered` webhook to reach the merchant's own handler
 * (here a small local server).
 *
 *   npm install --save-dev shipping-sandbox jest
 *   npx jest
 */
const { createHmac } = require('node:crypto');
const { createServer } = require('node:http');
const { startSandbox } = require('shipping-sandbox');

const WEBHOOK_SECRET = 'whsec_example-secret-for-tests';

let sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox.stop());

/** The shipping API, as the merchant's code calls it. */
async function api(method, path, body) {
  const response = await fetch(`${sandbox.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${sandbox.apiKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** The merchant's webhook handler: keeps what it receives. */
async function startWebhookHandler() {
  const received = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(204).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/webhooks/shipping`,
    received,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

const signatureOf = (body) => `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex')}`;

test('a delivered parcel reaches our webhook handler, signed', async () => {
  const handler = await startWebhookHandler();
  try {
    await api('POST', '/webhooks', {
      url: handler.url,
      events: ['tracking.delivered'],
      secret: WEBHOOK_SECRET,
    });
    const shipment = await api('POST', '/shipments', {
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
    const label = await api('POST', '/labels', { shipment_id: shipment.id });

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
