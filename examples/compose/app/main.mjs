// A merchant's app in miniature: it uses the sandbox as it would the real service, and receives its
// webhooks. Plain Node 20, no dependencies. Exits 0 once every expected webhook has arrived, signed.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const { SHIPPING_API_URL, WEBHOOK_URL } = process.env;
const EXPECTED = ['shipment.created', 'label.generated'];
const secret = randomBytes(24).toString('hex');

async function call(url, method, body, apiKey) {
  const response = await fetch(url, {
    method,
    headers: {
      'content-type': 'application/json',
      ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

// The signature is over the exact bytes received: check it before parsing them.
function verified(rawBody, header) {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`);
  const given = Buffer.from(header ?? '');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const received = new Set();
const server = createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const raw = Buffer.concat(chunks);
    if (!verified(raw, request.headers['service-signature'])) {
      response.writeHead(401).end();
      return;
    }
    const { event, id } = JSON.parse(raw.toString('utf8'));
    console.log(`webhook ${event} ${id}`);
    received.add(event);
    response.writeHead(204).end();
    if (EXPECTED.every((name) => received.has(name))) {
      console.log('every webhook arrived, signed');
      server.close(() => process.exit(0));
    }
  });
});
// On every interface: the sandbox connects from its own container.
server.listen(Number(new URL(WEBHOOK_URL).port || 80), '0.0.0.0');
setTimeout(() => {
  console.error(`timed out; received ${[...received].join(', ') || 'no webhook'}`);
  process.exit(1);
}, 30_000).unref();

// An account of its own, so that runs against a kept data volume never see each other's data.
const account = await call(new URL('/_sandbox/accounts', SHIPPING_API_URL), 'POST', {
  name: 'compose example',
});
const key = account.api_key;
await call(`${SHIPPING_API_URL}/webhooks`, 'POST', { url: WEBHOOK_URL, events: EXPECTED, secret }, key);
const address = (name, address1, city, state, zip) => ({ name, address1, city, state, zip, country: 'US' });
const shipment = await call(
  `${SHIPPING_API_URL}/shipments`,
  'POST',
  {
    from: address('Ada Lovelace', '417 Montgomery St', 'San Francisco', 'CA', '94104'),
    to: address('Grace Hopper', '350 5th Ave', 'New York', 'NY', '10118'),
    parcel: { weight: 1200, length: 30, width: 20, height: 10 },
  },
  key,
);
const label = await call(`${SHIPPING_API_URL}/labels`, 'POST', { shipment_id: shipment.id }, key);
console.log(`shipment ${shipment.id}, label ${label.id}, tracking ${label.tracking_number}`);
