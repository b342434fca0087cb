/**
 * A merchant's test with Vitest: one sandbox for the file, started in-process on a free port and
 * stopped at the end. It buys a label, forces the parcel to "delivered", and waits for the
 * `tracking.delivered` webhook to reach the merchant's own handler (here a small local server), which
 * checks its signature with the package's `verifySignature` and reads it as a typed payload.
 *
 *   npm install --save-dev shipping-sandbox vitest
 *   npx vitest run
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Sandbox, startSandbox } from 'shipping-sandbox';
import {
  createClient,
  createSandboxClient,
  verifySignature,
  type WebhookPayload,
} from 'shipping-sandbox/client';
import { afterAll, beforeAll, expect, test } from 'vitest';

const WEBHOOK_SECRET = 'whsec_example-secret-for-tests';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox.stop());

/** The merchant's webhook handler: refuses what is not signed with its secret, keeps the rest. */
async function startWebhookHandler() {
  const received: WebhookPayload<'tracking.delivered'>[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      // The signature covers the raw bytes: check it before parsing them.
      if (!verifySignature(body, req.headers['service-signature'], WEBHOOK_SECRET)) {
        res.writeHead(401).end();
        return;
      }
      received.push(JSON.parse(body.toString('utf8')) as WebhookPayload<'tracking.delivered'>);
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

test('a delivered parcel reaches our webhook handler, signed', async () => {
  // The API, as the merchant's code calls it, and the sandbox's own controls: both typed.
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
    // Our handler took the event once: genuine, and typed as the tracking.delivered payload.
    expect(handler.received).toMatchObject([
      {
        id: delivery.event_id,
        event: 'tracking.delivered',
        data: { tracking_number: label?.tracking_number, status: 'delivered' },
      },
    ]);
  } finally {
    await handler.close();
  }
});
