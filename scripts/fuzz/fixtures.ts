import { type Answer, jsonRequest, send } from './http.js';

/** Real values of one account that generated requests pick from (path ids, cursors, names). */
export interface Pools {
  shipments: string[];
  labels: string[];
  trackingNumbers: string[];
  /** The documented magic tracking numbers: every account's, and none can be changed. */
  magicTrackingNumbers: string[];
  webhooks: string[];
  deliveries: string[];
  /** Keys the fuzzer may revoke: never the account's own key, which the rest of the pass needs. */
  keys: string[];
  faults: string[];
  /** Pre-signed label files: the `/cdn` path segment with the query that signs it. */
  labelFiles: { file: string; expires: string; signature: string }[];
  cursors: string[];
  scenarios: string[];
  carriers: string[];
  services: string[];
  events: string[];
}

/** An account made for one operation's requests, with every kind of resource in it. */
export interface FuzzAccount {
  id: string;
  /** A full key. */
  key: string;
  /** A key with `shipments:read` only, and its id. */
  restrictedKey: string;
  restrictedKeyId: string;
  /** A key of this account, revoked. */
  revokedKey: string;
  pools: Pools;
}

const ORIGIN_ADDRESS = {
  name: 'Ada Lovelace',
  company: 'Analytical Engines',
  address1: '417 Montgomery St',
  city: 'San Francisco',
  state: 'CA',
  zip: '94104',
  country: 'US',
};
const DESTINATION_ADDRESS = {
  name: 'Grace Hopper',
  address1: '350 5th Ave',
  city: 'New York',
  state: 'NY',
  zip: '10118',
  country: 'US',
};
const PARCEL = { weight: 1200, length: 30, width: 20, height: 10 };
export const SHIPMENT_BODY = {
  from: ORIGIN_ADDRESS,
  to: DESTINATION_ADDRESS,
  parcel: PARCEL,
  reference: 'fuzz',
};

export const EVENT_TYPES = [
  'shipment.created',
  'shipment.cancelled',
  'label.generated',
  'label.voided',
  'tracking.updated',
  'tracking.delivered',
  'tracking.exception',
];

/** A setup request that must succeed: the pass cannot start without its account. */
async function expectJson(
  origin: string,
  method: string,
  target: string,
  key: string | null,
  body?: unknown,
) {
  let answer: Answer;
  try {
    answer = await send(origin, jsonRequest(method, target, key, body));
  } catch (error) {
    throw new Error(
      `setting up the fuzzing account: ${method} ${target} got no answer (${(error as Error).message})`,
    );
  }
  if (answer.status >= 300)
    throw new Error(
      `setting up the fuzzing account: ${method} ${target} answered ${answer.status} ${answer.text}`,
    );
  // biome-ignore lint/suspicious/noExplicitAny: setup answers are read field by field, as the contract shapes them
  return JSON.parse(answer.text) as any;
}

/**
 * A new account with shipments in each state (three without a label, for labels to be bought),
 * labels (active and voided, each format), a webhook
 * with deliveries that succeeded and failed, keys, a fault rule that matches nothing, a cursor, and
 * its rate limits switched off so that the pass measures answers, not the per-key ceiling.
 */
export async function prepareAccount(
  origin: string,
  receiver: { url: string; failingUrl: string },
): Promise<FuzzAccount> {
  const call = (method: string, target: string, body?: unknown, key: string | null = account.api_key) =>
    expectJson(origin, method, target, key, body);

  const account = await expectJson(origin, 'POST', '/_sandbox/accounts', null, { name: 'fuzz' });
  await call('POST', '/_sandbox/account', { rate_limits: false });

  const restricted = await call('POST', '/_sandbox/keys', {
    name: 'fuzz read-only',
    scopes: ['shipments:read'],
  });
  const revoked = await call('POST', '/_sandbox/keys', { name: 'fuzz revoked' });
  await call('DELETE', `/_sandbox/keys/${revoked.id}`);
  const spareKeys = [
    await call('POST', '/_sandbox/keys', { name: 'fuzz spare 1' }),
    await call('POST', '/_sandbox/keys', { name: 'fuzz spare 2', scopes: ['rates:read'] }),
  ];

  const webhooks = [
    await call('POST', '/v1/webhooks', {
      url: receiver.url,
      events: EVENT_TYPES,
      secret: 'whsec_fuzzing-the-sandbox',
    }),
    await call('POST', '/v1/webhooks', {
      url: receiver.failingUrl,
      events: ['shipment.created'],
      secret: 'whsec_fuzzing-the-sandbox',
    }),
  ];

  const rates = await call('POST', '/v1/rates', {
    from: ORIGIN_ADDRESS,
    to: DESTINATION_ADDRESS,
    parcel: PARCEL,
  });
  const shipments = [];
  for (let i = 0; i < 8; i++) shipments.push(await call('POST', '/v1/shipments', SHIPMENT_BODY));
  const labels = [];
  for (const [i, format] of (['pdf', 'png', 'zpl', 'pdf'] as const).entries())
    labels.push(await call('POST', '/v1/labels', { shipment_id: shipments[i].id, format }));
  await call('DELETE', `/v1/labels/${labels[1].id}`);
  await call('DELETE', `/v1/shipments/${shipments[4].id}`);
  await call('POST', `/_sandbox/shipments/${shipments[0].id}/advance`, { status: 'delivered' });
  await call('POST', `/_sandbox/shipments/${shipments[2].id}/advance`, { status: 'exception' });
  // Sends the deliveries and runs the first retries of the failing webhook.
  await call('POST', '/_sandbox/clock/advance', { by: '10m' });

  const deliveries = [];
  for (const webhook of webhooks)
    deliveries.push(...(await call('GET', `/_sandbox/webhooks/${webhook.id}/deliveries`)).data);
  const fault = await call('POST', '/_sandbox/faults', { path: '/v1/fuzz-matches-nothing', status: 503 });
  const page = await call('GET', '/v1/shipments?limit=2');
  const scenarios = await call('GET', '/_sandbox/scenarios');

  return {
    id: account.id,
    key: account.api_key,
    restrictedKey: restricted.value,
    restrictedKeyId: restricted.id,
    revokedKey: revoked.value,
    pools: {
      shipments: shipments.map((s) => s.id),
      labels: labels.map((l) => l.id),
      trackingNumbers: labels.map((l) => l.tracking_number),
      magicTrackingNumbers: ['9400100000000000000150', '9400100000000000000273'],
      webhooks: webhooks.map((w) => w.id),
      deliveries: deliveries.map((d: { id: string }) => d.id),
      keys: [restricted.id, revoked.id, ...spareKeys.map((k) => k.id)],
      faults: [fault.id],
      labelFiles: labels.map((l) => labelFile(l.label_url)),
      cursors: page.meta.cursor ? [page.meta.cursor] : [],
      scenarios: scenarios.data.map((s: { name: string }) => s.name),
      carriers: [...new Set<string>(rates.data.map((r: { carrier: string }) => r.carrier))],
      services: [...new Set<string>(rates.data.map((r: { service: string }) => r.service))],
      events: EVENT_TYPES,
    },
  };
}

function labelFile(labelUrl: string) {
  const url = new URL(labelUrl);
  return {
    file: url.pathname.split('/').pop() ?? '',
    expires: url.searchParams.get('expires') ?? '',
    signature: url.searchParams.get('signature') ?? '',
  };
}
