/**
 * A merchant's test with Jest, in plain CommonJS (no transform): one sandbox for the file, started
 * in-process on a free port and stopped at the end. It buys a label, forces the parcel to
 * "delivered", and waits for the `tracking.delivered` webhook to reach the merchant's own handler
 * (here a small local server), which checks its signature with the package's `verifySignature`.
 *
 *   npm install --save-dev shipping-sandbox jest
 *   npx jest
 */
const { createServer } = require('node:http');
const { startSandbox } = require('shipping-sandbox');
const { createClient, createSandboxClient, verifySignature } = require('shipping-sandbox/client');

const WEBHOOK_SECRET = 'whsec_example-secret-for-tests';

let sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox.stop());

/** The merchant's webhook handler: refuses what is not signed with its secret, keeps the rest. */
async function startWebhookHandler() {
  const received = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      // The signature covers the raw bytes: check it before parsing them.
      if (!verifySignature(body, req.headers['service-signature'], WEBHOOK_SECRET)) {
        res.writeHead(401).end();
        return;
      }
      received.push(JSON.parse(body.toString('utf8')));
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

test('a delivered parcel reaches our webhook handler, signed', async () => {
  // The API, as the merchant's code calls it, and the sandbox's own controls.
  const api = createClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey });
  const controls = createSandboxClient({ origin: sandbox.origin, apiKey: sandbox.apiKey });
  const handler = await startWebhookHandler();
  try {
    await api.POST('/webhooks', {
      body: { url: handler.url, events: ['tracking.delivered'], secret: WEBHOOK_SECRET },
    });
    const { data: shipment, error } = await api.POST('/shipments', {
      body: {
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
      },
    });
    if (error) throw new Error(error.error.message);
    const { data: label } = await api.POST('/labels', { body: { shipment_id: shipment.id } });

    await controls.POST('/_sandbox/shipments/{id}/advance', {
      params: { path: { id: shipment.id } },
      body: { status: 'delivered' },
    });
    const delivery = await sandbox.waitForDelivery({ event: 'tracking.delivered' });

    expect(delivery.status).toBe('succeeded');
    // Our handler took the event once, and only because it was signed with our secret.
    expect(handler.received).toMatchObject([
      {
        id: delivery.event_id,
        event: 'tracking.delivered',
        data: { tracking_number: label.tracking_number, status: 'delivered' },
      },
    ]);
  } finally {
    await handler.close();
  }
});
