import { createHmac, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GenericContainer, type StartedTestContainer, TestContainers, Wait } from 'testcontainers';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';

/** Built from the sandbox's Dockerfile (`docker build -t shipping-sandbox .`), or one from a registry. */
const IMAGE = process.env.SHIPPING_SANDBOX_IMAGE ?? 'shipping-sandbox';
/** The sandbox's HTTP port in the container; Testcontainers maps it to a free one on this machine. */
const HTTP_PORT = 4010;
/** The name Testcontainers gives this machine inside the containers it starts. */
const THIS_MACHINE = 'host.testcontainers.internal';

const secret = randomBytes(24).toString('hex');
const deliveries: Array<{ event: string; signed: boolean }> = [];

// Webhooks come back to this process: a receiver on loopback, which Testcontainers forwards to the
// containers as host.testcontainers.internal (so it need not listen on every interface).
const receiver = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const raw = Buffer.concat(chunks);
    const expected = `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;
    const { event } = JSON.parse(raw.toString('utf8')) as { event: string };
    deliveries.push({ event, signed: request.headers['service-signature'] === expected });
    response.writeHead(204).end();
  });
});

let sandbox: StartedTestContainer;
let apiUrl: string;
let apiKey: string;
let receiverPort: number;

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(new URL(path, apiUrl), {
    method,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json as T;
}

beforeAll(async () => {
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  receiverPort = (receiver.address() as AddressInfo).port;
  // Before the sandbox starts: containers started afterwards can reach the port.
  await TestContainers.exposeHostPorts(receiverPort);

  sandbox = await new GenericContainer(IMAGE)
    .withExposedPorts(HTTP_PORT)
    .withEnvironment({
      // In a container the sandbox delivers webhooks to public addresses only: allow this machine,
      // over plain HTTP.
      SANDBOX_WEBHOOK_ALLOW_HOSTS: THIS_MACHINE,
      SANDBOX_ALLOW_HTTP_WEBHOOKS: 'true',
    })
    // Flags go after the image's entry point; nothing of this run needs to outlive the container.
    .withCommand(['--memory'])
    .withWaitStrategy(Wait.forHttp('/healthz', HTTP_PORT).forStatusCode(200))
    .withStartupTimeout(60_000)
    .start();
  // A trailing slash, so that relative paths resolve under /v1.
  apiUrl = `http://${sandbox.getHost()}:${sandbox.getMappedPort(HTTP_PORT)}/v1/`;

  // An account of this suite's own: open to create, and its key has every scope.
  const account = await fetch(new URL('/_sandbox/accounts', apiUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'testcontainers example' }),
  }).then((response) => response.json() as Promise<{ api_key: string }>);
  apiKey = account.api_key;
}, 120_000);

afterAll(async () => {
  await sandbox?.stop();
  receiver.close();
});

const address = (name: string, address1: string, city: string, state: string, zip: string) => ({
  name,
  address1,
  city,
  state,
  zip,
  country: 'US',
});
const SHIPMENT = {
  from: address('Ada Lovelace', '417 Montgomery St', 'San Francisco', 'CA', '94104'),
  to: address('Grace Hopper', '350 5th Ave', 'New York', 'NY', '10118'),
  parcel: { weight: 1200, length: 30, width: 20, height: 10 },
};

it('creates a shipment, buys its label, and sees it delivered days later on the account clock', async () => {
  const shipment = await call<{ id: string; status: string }>('POST', 'shipments', SHIPMENT);
  expect(shipment.status).toBe('created');
  const label = await call<{ tracking_number: string }>('POST', 'labels', { shipment_id: shipment.id });

  // Days pass in one call: every tracking step due by then runs before it answers.
  await call('POST', '/_sandbox/clock/advance', { by: '10d' });
  const tracking = await call<{ status: string }>('GET', `tracking/${label.tracking_number}`);
  expect(tracking.status).toBe('delivered');
});

it('delivers signed webhooks to this machine', async () => {
  await call('POST', 'webhooks', {
    url: `http://${THIS_MACHINE}:${receiverPort}/webhooks`,
    events: ['shipment.created'],
    secret,
  });
  await call('POST', 'shipments', SHIPMENT);
  // Delivery runs in the background, at once: wait for it, but not for ever.
  await vi.waitFor(() => expect(deliveries).toContainEqual({ event: 'shipment.created', signed: true }), {
    timeout: 10_000,
  });
}, 15_000);
