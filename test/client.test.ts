import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { buildDocument, CLIENT_SCHEMA_PATH, clientSchemaSource } from '../scripts/generate-client.js';
import {
  type ApiClient,
  createClient,
  createSandboxClient,
  type ErrorCode,
  type Label,
  type SandboxClient,
  type Shipment,
  type TrackingRecord,
  verifySignature,
  type WebhookData,
  type WebhookEvent,
  type WebhookPayload,
} from '../src/client/index.js';
import { testConfig } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { TEST_ENGINE } from './databases.js';
import { PARCEL, US_DESTINATION, US_ORIGIN } from './helpers.js';
import { type ReceivedRequest, type Receiver, startReceiver } from './receiver.js';

describe('the generated client types (src/client/schema.ts)', () => {
  it('are current: generating them again from the document gives the committed file', {
    timeout: 30_000,
  }, async () => {
    const generated = await clientSchemaSource(await buildDocument());
    expect(generated).toContain('export interface paths');
    expect(generated).toContain('"/shipments": {');
    // If this fails, run `npm run generate:client` and commit src/client/schema.ts.
    expect(generated === readFileSync(CLIENT_SCHEMA_PATH, 'utf8')).toBe(true);
  });
});

const SHIPMENT = { from: US_ORIGIN, to: US_DESTINATION, parcel: PARCEL, reference: 'order-1042' };

describe('the typed client, against a real server', () => {
  let server: RunningSandbox;
  let controls: SandboxClient;
  let client: ApiClient;
  let apiKey: string;
  /** Every request the API client sent, as it left. */
  const sent: Request[] = [];

  beforeAll(async () => {
    server = await startServer(testConfig());
    const { data } = await createSandboxClient({ origin: server.origin }).POST('/_sandbox/accounts', {
      body: { name: 'client test' },
    });
    if (!data) throw new Error('no account');
    apiKey = data.api_key;
    controls = createSandboxClient({ origin: server.origin, apiKey });
    client = createClient({
      baseUrl: `${server.origin}/v1`,
      apiKey,
      fetch: (request) => {
        sent.push(request.clone());
        return fetch(request);
      },
    });
  });
  afterAll(() => server.close());

  it('creates a shipment and reads it back, typed, with the key on every request', async () => {
    const created = await client.POST('/shipments', { body: SHIPMENT });
    expect(created.response.status).toBe(201);
    expectTypeOf(created.data).toEqualTypeOf<Shipment | undefined>();
    const shipment = created.data as Shipment;
    expect(shipment).toMatchObject({ status: 'created', reference: 'order-1042', label_id: null });

    const read = await client.GET('/shipments/{id}', { params: { path: { id: shipment.id } } });
    expect(read.data).toEqual(shipment);
    expect(read.response.headers.get('X-RateLimit-Remaining')).toMatch(/^\d+$/);
    expect(sent.length).toBeGreaterThanOrEqual(2);
    for (const request of sent) expect(request.headers.get('authorization')).toBe(`Bearer ${apiKey}`);
  });

  it('lists with a typed, whole-number limit', async () => {
    await client.POST('/shipments', { body: SHIPMENT });
    const page = await client.GET('/shipments', { params: { query: { limit: 1 } } });
    expect(page.data?.data).toHaveLength(1);
    expect(page.data?.meta.has_more).toBe(true);
    expect(sent.at(-1)?.url).toMatch(/\/v1\/shipments\?limit=1$/);
    const next = await client.GET('/shipments', {
      params: { query: { limit: 1, cursor: page.data?.meta.cursor ?? '' } },
    });
    expect(next.data?.data[0]?.id).not.toBe(page.data?.data[0]?.id);
  });

  it('downloads a label as bytes (arrayBuffer) or a Blob, and says what to pass when not told', async () => {
    const shipment = (await client.POST('/shipments', { body: SHIPMENT })).data as Shipment;
    const png = await client.POST('/labels', { body: { shipment_id: shipment.id, format: 'png' } });
    const label = png.data as Label;
    expect(label.format).toBe('png');

    const bytes = await client.GET('/labels/{id}/download', {
      params: { path: { id: label.id } },
      parseAs: 'arrayBuffer',
    });
    expectTypeOf(bytes.data).toEqualTypeOf<ArrayBuffer | undefined>();
    expect(bytes.response.headers.get('content-type')).toBe('image/png');
    expect([...new Uint8Array(bytes.data as ArrayBuffer).subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);

    const other = (await client.POST('/shipments', { body: SHIPMENT })).data as Shipment;
    const pdf = (await client.POST('/labels', { body: { shipment_id: other.id } })).data as Label;
    const blob = await client.GET('/labels/{id}/download', {
      params: { path: { id: pdf.id } },
      parseAs: 'blob',
    });
    expect(blob.data?.type).toBe('application/pdf');
    expect(await blob.data?.slice(0, 5).text()).toBe('%PDF-');

    await expect(client.GET('/labels/{id}/download', { params: { path: { id: pdf.id } } })).rejects.toThrow(
      /parseAs: 'blob' or 'arrayBuffer'/,
    );
  });

  it('types an error answer by the codes its route can give', async () => {
    const refused = await client.POST('/shipments', {
      body: { ...SHIPMENT, to: { ...US_DESTINATION, zip: '' } },
    });
    expect(refused.data).toBeUndefined();
    expect(refused.response.status).toBe(422);
    expect(refused.error?.error).toMatchObject({ code: 'invalid_field', field: 'to.zip' });
    // The route's own codes, not every code there is: a switch over them is exhaustive.
    type CreateShipmentCode = NonNullable<typeof refused.error>['error']['code'];
    expectTypeOf<CreateShipmentCode>().toExtend<ErrorCode>();
    expectTypeOf<'invalid_address'>().toExtend<CreateShipmentCode>();
    expectTypeOf<'label_already_voided'>().not.toExtend<CreateShipmentCode>();

    const missing = await client.GET('/shipments/{id}', {
      params: { path: { id: 'shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2' } },
    });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.error.code).toBe('not_found');

    const stranger = createClient({ baseUrl: `${server.origin}/v1`, apiKey: 'svc_test_nobody' });
    const unauthorised = await stranger.GET('/webhooks');
    expect(unauthorised.error?.error.code).toBe('invalid_api_key');
  });

  it("drives the sandbox's controls, typed over /_sandbox, and reads its events as webhook payloads", async () => {
    const shipment = (await client.POST('/shipments', { body: SHIPMENT })).data as Shipment;
    await client.POST('/labels', { body: { shipment_id: shipment.id } });
    const advanced = await controls.POST('/_sandbox/shipments/{id}/advance', {
      params: { path: { id: shipment.id } },
      body: { status: 'delivered' },
    });
    expectTypeOf(advanced.data).toEqualTypeOf<TrackingRecord | undefined>();
    expect(advanced.data?.status).toBe('delivered');

    const clock = await controls.POST('/_sandbox/clock/advance', { body: { by: '1h' } });
    expect(clock.data?.now).toMatch(/Z$/);

    const events = await controls.GET('/_sandbox/events', {
      params: { query: { event: 'tracking.delivered' } },
    });
    const delivered = events.data?.data[0];
    expect(delivered?.event).toBe('tracking.delivered');
    if (delivered?.event === 'tracking.delivered') {
      expectTypeOf(delivered.data).toEqualTypeOf<WebhookData<'tracking.delivered'>>();
      expect(delivered.data).toMatchObject({ status: 'delivered', carrier: shipment.carrier });
    }
    const health = await controls.GET('/healthz');
    expect(health.data).toEqual({ status: 'ok', database: TEST_ENGINE });
  });

  it('keeps the API and the controls apart in their types', () => {
    // @ts-expect-error: the API client's paths are relative to /v1; the controls are not among them.
    const wrong = () => client.GET('/_sandbox/clock');
    // @ts-expect-error: and the controls' client has no API path.
    const alsoWrong = () => controls.GET('/shipments');
    expect([typeof wrong, typeof alsoWrong]).toEqual(['function', 'function']);
  });
});

describe('verifySignature', () => {
  const SECRET = 'whsec_client-test-secret';
  let server: RunningSandbox;
  let receiver: Receiver;
  let delivery: ReceivedRequest;

  beforeAll(async () => {
    server = await startServer(testConfig());
    receiver = await startReceiver([200]);
    const { data } = await createSandboxClient({ origin: server.origin }).POST('/_sandbox/accounts', {
      body: {},
    });
    const client = createClient({ baseUrl: `${server.origin}/v1`, apiKey: data?.api_key ?? '' });
    const registered = await client.POST('/webhooks', {
      body: { url: receiver.url, events: ['shipment.created'], secret: SECRET },
    });
    expect(registered.response.status).toBe(201);
    const arrives = receiver.nextRequest();
    await client.POST('/shipments', { body: SHIPMENT });
    delivery = await arrives;
  });
  afterAll(async () => {
    await receiver.close();
    await server.close();
  });

  const header = () => delivery.headers['service-signature'] as string;

  it('accepts a real delivery, as bytes or as text', () => {
    expect(header()).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(verifySignature(delivery.body, header(), SECRET)).toBe(true);
    expect(verifySignature(delivery.body.toString('utf8'), header(), SECRET)).toBe(true);
    const copy = new Uint8Array(delivery.body).buffer;
    expect(verifySignature(copy, header(), SECRET)).toBe(true);
    // Node's header object may give a list: one value is that value.
    expect(verifySignature(delivery.body, [header()], SECRET)).toBe(true);

    const payload = JSON.parse(delivery.body.toString('utf8')) as WebhookEvent;
    expect(payload.event).toBe('shipment.created');
    if (payload.event === 'shipment.created') {
      expectTypeOf(payload).toEqualTypeOf<WebhookPayload<'shipment.created'>>();
      expectTypeOf(payload.data).toEqualTypeOf<Shipment>();
      expect(payload.data.status).toBe('created');
    }
  });

  it('refuses a wrong secret, a tampered body, and a missing or malformed header', () => {
    expect(verifySignature(delivery.body, header(), 'whsec_another-secret-entirely')).toBe(false);
    const tampered = Buffer.from(delivery.body.toString('utf8').replace('"created"', '"cancelled"'));
    expect(tampered.equals(delivery.body)).toBe(false);
    expect(verifySignature(tampered, header(), SECRET)).toBe(false);
    // Parsed and serialised again, the bytes differ even when the data does not.
    const reserialised = JSON.stringify(JSON.parse(delivery.body.toString('utf8')), null, 2);
    expect(verifySignature(reserialised, header(), SECRET)).toBe(false);

    expect(verifySignature(delivery.body, undefined, SECRET)).toBe(false);
    expect(verifySignature(delivery.body, null, SECRET)).toBe(false);
    expect(verifySignature(delivery.body, '', SECRET)).toBe(false);
    expect(verifySignature(delivery.body, [header(), header()], SECRET)).toBe(false);
    expect(verifySignature(delivery.body, header().slice('sha256='.length), SECRET)).toBe(false);
    expect(verifySignature(delivery.body, header().toUpperCase(), SECRET)).toBe(false);
    expect(verifySignature(delivery.body, `${header()}00`, SECRET)).toBe(false);
    expect(verifySignature(delivery.body, 'sha256=zz', SECRET)).toBe(false);
  });

  it('computes the scheme the contract fixes, and says so when handed parsed JSON or no secret', () => {
    const body = '{"id":"evt_1"}';
    const good = `sha256=${createHmac('sha256', 'k'.repeat(16)).update(body).digest('hex')}`;
    expect(verifySignature(body, good, 'k'.repeat(16))).toBe(true);
    expect(() => verifySignature(JSON.parse(body), good, 'k'.repeat(16))).toThrow(/raw body/);
    expect(() => verifySignature(body, good, '')).toThrow(/secret/);
  });
});
