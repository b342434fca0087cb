/**
 * The conformance script: the calls `shipping-sandbox conformance` makes, in order, against the target
 * and against its own sandbox. Written once, as data, in the order a merchant's own test would make
 * them: create a shipment, read it, try the errors a client must handle, buy each kind of label and
 * fetch it, track it, void it, page through the list, cancel, register a webhook. It never calls
 * `/_sandbox` (the real service has none) and cancels what it creates; what cannot be done without the
 * sandbox's own controls is listed with the reason and skipped. docs/conformance.md prints this list.
 */

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface Step {
  /** What the report and its JUnit test case call the step. */
  id: string;
  /** What a merchant's test would be checking, in words. */
  title: string;
  /**
   * `METHOD /path` relative to the base URL. `{name.field}` is a value of an earlier answer kept under
   * `name` (see `as`), `{unknown:name.field}` a made-up value of the same form that names nothing;
   * `METHOD {name.field}` alone calls the absolute URL an answer gave (a label's `label_url`).
   */
  call: string;
  /** The operation of the OpenAPI document whose responses describe the answer (`GET /shipments/{id}`). */
  operation: string;
  /** The key the call carries: the target's (the default), none, or one that belongs to no account. */
  auth?: 'key' | 'none' | 'unknown';
  /** A JSON body, whose string values may hold `{…}` as the call does. */
  body?: JsonValue;
  /** A body sent as it is (one that is not JSON), with `Content-Type: application/json`. */
  rawBody?: string;
  /** Keeps the answer's JSON body under this name, for the steps after it. */
  as?: string;
  /** The sandbox's answer, for the reader (and checked by the script's own test): `201`, `422 missing_field to`. */
  expect: string;
  /** Why the step cannot run against another deployment: it needs the sandbox's own controls. */
  skip?: string;
}

/** Values a run gives the script: `{input.webhook_url}`, `{input.secret}`. */
export interface ScriptInputs {
  webhook_url: string;
  secret: string;
}

const ORIGIN = {
  name: 'Ada Lovelace',
  company: 'Analytical Engines',
  address1: '417 Montgomery St',
  address2: 'Floor 5',
  city: 'San Francisco',
  state: 'CA',
  zip: '94104',
  country: 'US',
};
const DESTINATION = {
  name: 'Grace Hopper',
  address1: '350 5th Ave',
  city: 'New York',
  state: 'NY',
  zip: '10118',
  country: 'US',
};
const PARCEL = { weight: 1200, length: 30, width: 20, height: 10 };
const SHIPMENT = {
  carrier: 'ups',
  service: 'ground',
  from: ORIGIN,
  to: DESTINATION,
  parcel: PARCEL,
  reference: 'conformance-check',
};

const FORCED_STATUS =
  "needs a forced tracking status, which only the sandbox's own controls (/_sandbox) can set; the real service has none";

/** Buying a label of one format on a shipment of its own, then fetching it both ways. */
function labelSteps(format: 'pdf' | 'png' | 'zpl', shipment: string): Step[] {
  return [
    {
      id: `labels.create.${format}`,
      title: `Buy a ${format.toUpperCase()} label`,
      call: 'POST /labels',
      operation: 'POST /labels',
      body: { shipment_id: `{${shipment}.id}`, format },
      as: format,
      expect: '201',
    },
    {
      id: `labels.download.${format}`,
      title: `Download the ${format.toUpperCase()} label with the key`,
      call: `GET /labels/{${format}.id}/download`,
      operation: 'GET /labels/{id}/download',
      expect: '200',
    },
    {
      id: `labels.url.${format}`,
      title: `Fetch the ${format.toUpperCase()} label through its pre-signed label_url, without a key`,
      call: `GET {${format}.label_url}`,
      operation: 'GET /cdn/labels/{file}',
      auth: 'none',
      expect: '200',
    },
  ];
}

export const SCRIPT: readonly Step[] = [
  {
    id: 'shipments.create',
    title: 'Create a shipment (the first call: it also checks the key)',
    call: 'POST /shipments',
    operation: 'POST /shipments',
    body: SHIPMENT,
    as: 'shipment',
    expect: '201',
  },
  {
    id: 'shipments.get',
    title: 'Read the shipment back',
    call: 'GET /shipments/{shipment.id}',
    operation: 'GET /shipments/{id}',
    expect: '200',
  },
  {
    id: 'auth.no-key',
    title: 'Call without an API key',
    call: 'GET /shipments/{shipment.id}',
    operation: 'GET /shipments/{id}',
    auth: 'none',
    expect: '401 missing_api_key',
  },
  {
    id: 'auth.unknown-key',
    title: 'Call with a key that belongs to no account',
    call: 'GET /shipments/{shipment.id}',
    operation: 'GET /shipments/{id}',
    auth: 'unknown',
    expect: '401 invalid_api_key',
  },
  {
    id: 'shipments.create.missing-field',
    title: 'Create a shipment without its destination',
    call: 'POST /shipments',
    operation: 'POST /shipments',
    body: { carrier: 'ups', service: 'ground', from: ORIGIN, parcel: PARCEL },
    expect: '422 missing_field to',
  },
  {
    id: 'shipments.create.invalid-field',
    title: 'Create a shipment with a negative weight',
    call: 'POST /shipments',
    operation: 'POST /shipments',
    body: { ...SHIPMENT, parcel: { ...PARCEL, weight: -1 } },
    expect: '422 invalid_field parcel.weight',
  },
  {
    id: 'shipments.create.invalid-address',
    title: 'Create a shipment to a postal code that does not exist',
    call: 'POST /shipments',
    operation: 'POST /shipments',
    body: { ...SHIPMENT, to: { ...DESTINATION, zip: '00000' } },
    expect: '422 invalid_address to.zip',
  },
  {
    id: 'shipments.create.invalid-json',
    title: 'Send a body that is not JSON',
    call: 'POST /shipments',
    operation: 'POST /shipments',
    rawBody: '{"from": ',
    expect: '400 invalid_json',
  },
  {
    id: 'shipments.get.unknown-id',
    title: 'Read a shipment that does not exist',
    call: 'GET /shipments/{unknown:shipment.id}',
    operation: 'GET /shipments/{id}',
    expect: '404 not_found',
  },
  ...labelSteps('pdf', 'shipment'),
  {
    id: 'shipments.get.label-generated',
    title: 'Read the shipment once it has a label',
    call: 'GET /shipments/{shipment.id}',
    operation: 'GET /shipments/{id}',
    expect: '200',
  },
  {
    id: 'labels.create.already-exists',
    title: 'Buy a second label for the same shipment',
    call: 'POST /labels',
    operation: 'POST /labels',
    body: { shipment_id: '{shipment.id}', format: 'pdf' },
    expect: '422 label_already_exists shipment_id',
  },
  {
    id: 'labels.create.invalid-format',
    title: 'Ask for a label format that does not exist',
    call: 'POST /labels',
    operation: 'POST /labels',
    body: { shipment_id: '{shipment.id}', format: 'gif' },
    expect: '422 invalid_field format',
  },
  {
    id: 'labels.create.unknown-shipment',
    title: 'Buy a label for a shipment that does not exist',
    call: 'POST /labels',
    operation: 'POST /labels',
    body: { shipment_id: '{unknown:shipment.id}', format: 'pdf' },
    expect: '404 not_found',
  },
  {
    id: 'tracking.get',
    title: 'Track the parcel of the label just bought',
    call: 'GET /tracking/{pdf.tracking_number}',
    operation: 'GET /tracking/{tracking_number}',
    expect: '200',
  },
  {
    id: 'tracking.get.unknown',
    title: 'Track a tracking number that does not exist',
    call: 'GET /tracking/{unknown:pdf.tracking_number}',
    operation: 'GET /tracking/{tracking_number}',
    expect: '404 not_found',
  },
  {
    id: 'tracking.get.delivered',
    title: 'Track a delivered parcel',
    call: 'GET /tracking/{pdf.tracking_number}',
    operation: 'GET /tracking/{tracking_number}',
    expect: '200',
    skip: FORCED_STATUS,
  },
  {
    id: 'labels.void.scanned',
    title: 'Void a label the carrier has scanned',
    call: 'DELETE /labels/{pdf.id}',
    operation: 'DELETE /labels/{id}',
    expect: '422 label_already_scanned',
    skip: FORCED_STATUS,
  },
  {
    id: 'labels.void.window-expired',
    title: 'Void a label more than 30 days old',
    call: 'DELETE /labels/{pdf.id}',
    operation: 'DELETE /labels/{id}',
    expect: '422 void_window_expired',
    skip: "needs the account's clock moved 30 days on, which only the sandbox's own controls (/_sandbox) can do",
  },
  {
    id: 'labels.void',
    title: 'Void the label',
    call: 'DELETE /labels/{pdf.id}',
    operation: 'DELETE /labels/{id}',
    expect: '200',
  },
  {
    id: 'labels.void.again',
    title: 'Void the same label again',
    call: 'DELETE /labels/{pdf.id}',
    operation: 'DELETE /labels/{id}',
    expect: '422 label_already_voided',
  },
  {
    id: 'labels.void.unknown-id',
    title: 'Void a label that does not exist',
    call: 'DELETE /labels/{unknown:pdf.id}',
    operation: 'DELETE /labels/{id}',
    expect: '404 not_found',
  },
  {
    id: 'shipments.create.second',
    title: 'Create a second shipment, for a PNG label',
    call: 'POST /shipments',
    operation: 'POST /shipments',
    body: SHIPMENT,
    as: 'second',
    expect: '201',
  },
  ...labelSteps('png', 'second'),
  {
    id: 'shipments.create.third',
    title: 'Create a third shipment, for a ZPL label',
    call: 'POST /shipments',
    operation: 'POST /shipments',
    body: SHIPMENT,
    as: 'third',
    expect: '201',
  },
  ...labelSteps('zpl', 'third'),
  {
    id: 'shipments.list',
    title: 'List shipments one to a page',
    call: 'GET /shipments?limit=1',
    operation: 'GET /shipments',
    as: 'page',
    expect: '200',
  },
  {
    id: 'shipments.list.next-page',
    title: "Follow the page's cursor",
    call: 'GET /shipments?limit=1&cursor={page.meta.cursor}',
    operation: 'GET /shipments',
    expect: '200',
  },
  {
    id: 'shipments.list.invalid-limit',
    title: 'Ask for a page larger than the largest',
    call: 'GET /shipments?limit=500',
    operation: 'GET /shipments',
    expect: '400 invalid_parameter limit',
  },
  {
    id: 'shipments.list.invalid-cursor',
    title: 'Page with a cursor the API never gave',
    call: 'GET /shipments?limit=1&cursor={unknown:page.meta.cursor}',
    operation: 'GET /shipments',
    expect: '400 invalid_parameter cursor',
  },
  {
    id: 'shipments.cancel',
    title: 'Cancel the first shipment (its label voided)',
    call: 'DELETE /shipments/{shipment.id}',
    operation: 'DELETE /shipments/{id}',
    expect: '200',
  },
  {
    id: 'shipments.cancel.again',
    title: 'Cancel it again',
    call: 'DELETE /shipments/{shipment.id}',
    operation: 'DELETE /shipments/{id}',
    expect: '422 shipment_not_cancellable',
  },
  {
    id: 'shipments.cancel.delivered',
    title: 'Cancel a delivered shipment',
    call: 'DELETE /shipments/{third.id}',
    operation: 'DELETE /shipments/{id}',
    expect: '422 shipment_not_cancellable',
    skip: FORCED_STATUS,
  },
  {
    id: 'shipments.cancel.unknown-id',
    title: 'Cancel a shipment that does not exist',
    call: 'DELETE /shipments/{unknown:shipment.id}',
    operation: 'DELETE /shipments/{id}',
    expect: '404 not_found',
  },
  {
    id: 'labels.create.cancelled-shipment',
    title: 'Buy a label for the cancelled shipment',
    call: 'POST /labels',
    operation: 'POST /labels',
    body: { shipment_id: '{shipment.id}', format: 'pdf' },
    expect: '422 shipment_cancelled shipment_id',
  },
  {
    id: 'shipments.cancel.with-label',
    title: 'Cancel the second shipment, which has an active label',
    call: 'DELETE /shipments/{second.id}',
    operation: 'DELETE /shipments/{id}',
    expect: '200',
  },
  {
    id: 'shipments.cancel.third',
    title: 'Cancel the third shipment',
    call: 'DELETE /shipments/{third.id}',
    operation: 'DELETE /shipments/{id}',
    expect: '200',
  },
  {
    id: 'webhooks.create',
    title: 'Register a webhook (deleted again right after the script, where the target can)',
    call: 'POST /webhooks',
    operation: 'POST /webhooks',
    // An event no step raises: the webhook lives for a moment and is never sent anything.
    body: { url: '{input.webhook_url}', events: ['tracking.exception'], secret: '{input.secret}' },
    as: 'webhook',
    expect: '201',
  },
  {
    id: 'webhooks.create.unknown-event',
    title: 'Register a webhook for an event that does not exist',
    call: 'POST /webhooks',
    operation: 'POST /webhooks',
    body: { url: '{input.webhook_url}', events: ['parcel.teleported'], secret: '{input.secret}' },
    expect: '422 invalid_field events.0',
  },
  {
    id: 'webhooks.create.missing-field',
    title: 'Register a webhook without its secret',
    call: 'POST /webhooks',
    operation: 'POST /webhooks',
    body: { url: '{input.webhook_url}', events: ['tracking.exception'] },
    expect: '422 missing_field secret',
  },
  {
    id: 'rate-limits.exceeded',
    title: 'Go past the rate limit',
    call: 'GET /shipments',
    operation: 'GET /shipments',
    expect: '429 rate_limit_exceeded',
    skip: "needs more than a key's 120 calls a minute: the script does not flood another deployment",
  },
];
