import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type ApiClient,
  createClient,
  createSandboxClient,
  type SandboxClient,
  verifySignature,
  type WebhookEvent,
} from 'shipping-sandbox/client';
import { GenericContainer, type StartedTestContainer, TestContainers, Wait } from 'testcontainers';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';

/** Built from the sandbox's Dockerfile (`docker build -t shipping-sandbox .`), or one from a registry. */
const IMAGE = process.env.SHIPPING_SANDBOX_IMAGE ?? 'shipping-sandbox';
/** The sandbox's HTTP port in the container; Testcontainers maps it to a free one on this machine. */
const HTTP_PORT = 4010;
/** The name Testcontainers gives this machine inside the containers it starts. */
const THIS_MACHINE = 'host.testcontainers.internal';

const secret = randomBytes(24).toString('hex');
const deliveries: Array<{ event: WebhookEvent['event'] }> = [];

// Webhooks come back to this process: a receiver on loopback, which Testcontainers forwards to the
// containers as host.testcontainers.internal (so it need not listen on every interface). It keeps
// only deliveries signed with the webhook's secret, checked over the raw body.
const receiver = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const raw = Buffer.concat(chunks);
    if (!verifySignature(raw, request.headers['service-signature'], secret)) {
      response.writeHead(401).end();
      return;
    }
    const { event } = JSON.parse(raw.toString('utf8')) as WebhookEvent;
    deliveries.push({ event });
    response.writeHead(204).end();
  });
});

let sandbox: StartedTestContainer;
let api: ApiClient;
let controls: SandboxClient;
let receiverPort: number;

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
  const origin = `http://${sandbox.getHost()}:${sandbox.getMappedPort(HTTP_PORT)}`;

  // An account of this suite's own: open to create, and its key has every scope.
  const { data: account, error } = await createSandboxClient({ origin }).POST('/_sandbox/accounts', {
    body: { name: 'testcontainers example' },
  });
  if (error) throw new Error(error.error.message);
  api = createClient({ baseUrl: `${origin}/v1`, apiKey: account.api_key });
  controls = createSandboxClient({ origin, apiKey: account.api_key });
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
  const { data: shipment } = await api.POST('/shipments', { body: SHIPMENT });
  expect(shipment?.status).toBe('created');
  const { data: label } = await api.POST('/labels', { body: { shipment_id: shipment?.id ?? '' } });

  // Days pass in one call: every tracking step due by then runs before it answers.
  await controls.POST('/_sandbox/clock/advance', { body: { by: '10d' } });
  const { data: tracking } = await api.GET('/tracking/{tracking_number}', {
    params: { path: { tracking_number: label?.tracking_number ?? '' } },
  });
  expect(tracking?.status).toBe('delivered');
});

it('delivers signed webhooks to this machine', async () => {
  await api.POST('/webhooks', {
    body: { url: `http://${THIS_MACHINE}:${receiverPort}/webhooks`, events: ['shipment.created'], secret },
  });
  await api.POST('/shipments', { body: SHIPMENT });
  // Delivery runs in the background, at once: wait for it, but not for ever.
  await vi.waitFor(() => expect(deliveries).toContainEqual({ event: 'shipment.created' }), {
    timeout: 10_000,
  });
}, 15_000);
