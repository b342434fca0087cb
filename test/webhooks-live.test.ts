import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { DEFAULT_KEY, shipmentRequest } from './helpers.js';
import { startReceiver } from './receiver.js';

/**
 * The real server with its scheduler running: the first try of a delivery goes out on its own, and a
 * receiver that never answers holds up neither the API nor other receivers.
 */
describe('deliveries on a running server', () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startServer(testConfig({ webhookTimeoutMs: 5_000 }));
  });
  afterAll(() => sandbox.close());

  const api = (path: string, body?: unknown) =>
    fetch(`${sandbox.origin}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it('sends at once, while a hanging receiver waits, and the API keeps answering', async () => {
    const stuck = await startReceiver(['hang']);
    const healthy = await startReceiver([204]);
    try {
      for (const receiver of [stuck, healthy]) {
        const registered = await api('/v1/webhooks', {
          url: receiver.url,
          events: ['shipment.created'],
          secret: 'a-secret-of-16-chars',
        });
        expect(registered.status).toBe(201);
      }
      const stuckGotIt = stuck.nextRequest();
      const healthyGotIt = healthy.nextRequest();
      const created = await api('/v1/shipments', shipmentRequest());
      expect(created.status).toBe(201);

      // Both receive the event without any clock being moved: the first try is immediate.
      const [held, delivered] = await Promise.all([stuckGotIt, healthyGotIt]);
      expect(held.body.equals(delivered.body)).toBe(true);

      // The stuck receiver still holds its request open; the API answers regardless.
      const list = await api('/v1/shipments');
      expect(list.status).toBe(200);
      expect(stuck.requests).toHaveLength(1);

      // More events than all the sends allowed on the wire at once: the stuck receiver holds only its
      // own share, and every event still reaches the healthy one.
      const allDelivered = new Promise<void>((resolve) => {
        const check = () =>
          healthy.requests.length >= 81 ? resolve() : void healthy.nextRequest().then(check);
        check();
      });
      for (let i = 0; i < 80; i++) expect((await api('/v1/shipments', shipmentRequest())).status).toBe(201);
      await allDelivered;
      expect(stuck.requests.length).toBeLessThanOrEqual(4);
    } finally {
      await stuck.close();
      await healthy.close();
    }
  });
});
