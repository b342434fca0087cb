import fc from 'fast-check';
import type { ApiDocument, Operation, Parameter } from './document.js';
import type { FuzzAccount, Pools } from './fixtures.js';
import {
  BROKEN_BODIES,
  CONTENT_TYPES,
  garbageValue,
  HOSTILE_KEYS,
  HOSTILE_STRINGS,
  hostileQueryValue,
  RAW_NUMBER_LITERALS,
} from './hostile.js';
import { encodeUtf8, type FuzzRequest } from './http.js';
import { keepUrlsOnLoopback } from './safety.js';
import { arbitraryOf } from './schema-arbitrary.js';

/** Which key a request carries. */
export type AuthKind = 'key' | 'restricted key' | 'revoked key' | 'no key' | 'malformed key' | 'foreign key';

export interface GeneratedRequest extends FuzzRequest {
  auth: AuthKind;
  /** The path parameters' values, before encoding. */
  pathValues: Record<string, string>;
  /** Whether a path parameter is a real id of the account (a foreign key must then get no 2xx). */
  realId: boolean;
  /** How many times the request is sent at once: 1, or a burst. */
  copies: number;
}

export interface RequestContext {
  document: ApiDocument;
  operation: Operation;
  account: FuzzAccount;
  /** A full key of another account. */
  foreignKey: string;
  receiver: { url: string; failingUrl: string };
}

const BURST = 3;

/** Every request the fuzzer sends for an operation comes out of this arbitrary. */
export function requestArbitrary(context: RequestContext): fc.Arbitrary<GeneratedRequest> {
  const { operation } = context;
  const auth = authArbitrary(context);
  const path = pathArbitrary(context);
  const body = bodyArbitrary(context);
  // One request in twenty is a burst of three at once.
  const copies = fc.nat({ max: 19 }).map((n) => (n === 0 ? BURST : 1));
  return fc.tuple(auth, path, body, copies).chain(([authChoice, pathChoice, bodyChoice, copyCount]) =>
    queryArbitrary(context, pathChoice.values).map((queryChoice): GeneratedRequest => {
      const headers: Record<string, string> = {};
      if (authChoice.header !== undefined) headers.authorization = authChoice.header;
      if (bodyChoice.contentType !== null) headers['content-type'] = bodyChoice.contentType;
      return {
        method: operation.method,
        target: `${pathChoice.path}${queryChoice.query}`,
        headers,
        ...(bodyChoice.bytes ? { body: bodyChoice.bytes } : {}),
        variant: [
          authChoice.kind,
          pathChoice.variant,
          queryChoice.variant,
          bodyChoice.variant,
          copyCount > 1 ? `${copyCount} at once` : '',
        ]
          .filter(Boolean)
          .join(', '),
        auth: authChoice.kind,
        pathValues: pathChoice.values,
        realId: pathChoice.realId,
        copies: copyCount,
      };
    }),
  );
}

// ---------------------------------------------------------------------------------------------- keys

function authArbitrary({ account, foreignKey }: RequestContext) {
  const bearer = (kind: AuthKind, key: string) =>
    fc.constant({ kind, header: `Bearer ${key}` as string | undefined });
  const malformed = [
    'Bearer',
    'Bearer ',
    `bearer ${account.key}`,
    `Bearer  ${account.key}`,
    `Token ${account.key}`,
    `Basic ${Buffer.from(`${account.key}:`).toString('base64')}`,
    `Bearer ${account.key} ${account.key}`,
    `Bearer ${account.key.toUpperCase()}`,
    `Bearer ${account.key.slice(0, -1)}`,
    `Bearer ${account.key}x`,
    'Bearer svc_live_0123456789abcdef0123456789abcdef',
    `Bearer svc_test_${'0'.repeat(40)}`,
    `Bearer ${'a'.repeat(3_000)}`,
    'Bearer é',
    `${account.key}`,
  ];
  return fc.oneof(
    { weight: 14, arbitrary: bearer('key', account.key) },
    { weight: 2, arbitrary: bearer('restricted key', account.restrictedKey) },
    { weight: 1, arbitrary: bearer('revoked key', account.revokedKey) },
    { weight: 1, arbitrary: bearer('foreign key', foreignKey) },
    { weight: 1, arbitrary: fc.constant({ kind: 'no key' as AuthKind, header: undefined }) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(...malformed)
        .map((header) => ({ kind: 'malformed key' as AuthKind, header })),
    },
  );
}

// ---------------------------------------------------------------------------------------------- path

/** The real values a path parameter can take in the account, by its name and the segment before it. */
function poolOf(pools: Pools, path: string, name: string): string[] {
  if (name === 'tracking_number') return pools.trackingNumbers;
  if (name === 'file') return pools.labelFiles.map((f) => f.file);
  const segments = path.split('/');
  const resource = segments[segments.indexOf(`{${name}}`) - 1];
  const byResource: Record<string, string[]> = {
    shipments: pools.shipments,
    labels: pools.labels,
    webhooks: pools.webhooks,
    keys: pools.keys,
    faults: pools.faults,
    deliveries: pools.deliveries,
  };
  return (resource && byResource[resource]) || [];
}

const ULID_TEXT = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** An id of the right form that names nothing: `shp_` and a fresh ULID, digits for a tracking number. */
function madeUpLike(real: string): fc.Arbitrary<string> {
  const prefix = /^([a-z]+_)/.exec(real)?.[1];
  if (prefix) return fc.stringMatching(ULID_TEXT).map((ulid) => `${prefix}${ulid}`);
  if (/^\d+$/.test(real)) return fc.stringMatching(/^\d{12,34}$/);
  if (real.includes('.'))
    return fc
      .stringMatching(ULID_TEXT)
      .map((ulid) => `${real.split('_')[0]}_${ulid}${real.slice(real.indexOf('.'))}`);
  return fc.stringMatching(/^[A-Za-z0-9_]{4,40}$/);
}

interface PathChoice {
  path: string;
  values: Record<string, string>;
  variant: string;
  realId: boolean;
}

function pathArbitrary({ operation, account }: RequestContext): fc.Arbitrary<PathChoice> {
  if (operation.pathParams.length === 0)
    return fc.constant({ path: operation.path, values: {}, variant: '', realId: false });
  const params = operation.pathParams.map((param) => paramValue(account.pools, operation.path, param));
  return fc.tuple(...params).map((choices) => {
    let path = operation.path;
    const values: Record<string, string> = {};
    for (const [i, param] of operation.pathParams.entries()) {
      const choice = choices[i];
      if (!choice) continue;
      values[param.name] = choice.value;
      // Raw: as typed into a URL bar (`%zz`, `..`, `/` and `?` change what the server sees).
      path = path.replace(`{${param.name}}`, choice.raw ? choice.value : encodeSegment(choice.value));
    }
    return {
      path,
      values,
      variant: choices
        .map((c) => `${c.kind} ${operation.pathParams.length > 1 ? '' : 'id'}`.trim())
        .join(' '),
      realId: choices.some((c) => c.kind === 'real'),
    };
  });
}

/**
 * `encodeURIComponent`, but a lone surrogate (which it refuses) goes as U+FFFD, as a browser's URL
 * parser sends it.
 */
function encodeSegment(text: string): string {
  return encodeURIComponent(
    text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'),
  );
}

function paramValue(pools: Pools, path: string, param: Parameter) {
  const real = poolOf(pools, path, param.name);
  const choice = (kind: 'real' | 'magic' | 'made-up' | 'hostile', raw: boolean) => (value: string) => ({
    kind,
    value,
    raw,
  });
  const options = [
    { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS).map(choice('hostile', false)) },
    { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_STRINGS).map(choice('hostile', true)) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }).map(choice('hostile', false)) },
  ];
  if (param.name === 'tracking_number')
    options.push({
      weight: 1,
      arbitrary: fc.constantFrom(...pools.magicTrackingNumbers).map(choice('magic', false)),
    });
  if (real.length > 0) {
    options.push({ weight: 8, arbitrary: fc.constantFrom(...real).map(choice('real', false)) });
    options.push({ weight: 2, arbitrary: madeUpLike(real[0] ?? '').map(choice('made-up', false)) });
  } else {
    options.push({
      weight: 4,
      arbitrary: fc.stringMatching(/^[a-z]{2,4}_[0-9A-Z]{26}$/).map(choice('made-up', false)),
    });
  }
  return fc.oneof(...options);
}

// --------------------------------------------------------------------------------------------- query

interface QueryChoice {
  query: string;
  variant: string;
}

/**
 * Keeps the request line and headers within Node's 16 KiB limit, long path and key included: going
 * past it is a transport error (431), which the routes never see.
 */
const LONGEST_QUERY = 5_000;

function queryArbitrary(
  context: RequestContext,
  pathValues: Record<string, string>,
): fc.Arbitrary<QueryChoice> {
  const { operation, account } = context;
  const perParam = operation.queryParams.map((param) => {
    const valid = validQueryValue(account.pools, param, pathValues);
    return fc.oneof(
      { weight: 3, arbitrary: fc.constant({ pairs: [] as [string, string][], kind: '' }) },
      {
        weight: 4,
        arbitrary: valid.map((v) => ({ pairs: [[param.name, v]] as [string, string][], kind: '' })),
      },
      {
        weight: 2,
        arbitrary: hostileQueryValue().map((v) => ({
          pairs: [[param.name, v.slice(0, LONGEST_QUERY)]] as [string, string][],
          kind: `hostile ${param.name}`,
        })),
      },
      {
        weight: 1,
        arbitrary: fc.tuple(valid, fc.oneof(valid, hostileQueryValue())).map(([a, b]) => ({
          pairs: [
            [param.name, a],
            [param.name, b.slice(0, LONGEST_QUERY)],
          ] as [string, string][],
          kind: `repeated ${param.name}`,
        })),
      },
      {
        weight: 1,
        arbitrary: valid.map((v) => ({
          pairs: [[`${param.name}[]`, v]] as [string, string][],
          kind: `${param.name}[]`,
        })),
      },
    );
  });
  const unknown = fc.oneof(
    { weight: 9, arbitrary: fc.constant({ pairs: [] as [string, string][], kind: '' }) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom(...HOSTILE_KEYS, 'limit', 'cursor', 'status'), hostileQueryValue())
        .map(([k, v]) => ({
          pairs: [[k.slice(0, 100), v.slice(0, 100)]] as [string, string][],
          kind: 'unknown parameter',
        })),
    },
  );
  const generated = fc.tuple(fc.tuple(...perParam, unknown), fc.nat({ max: 9 })).map(([choices, rawDraw]) => {
    const pairs = choices.flatMap((c) => c.pairs);
    const kinds = choices.map((c) => c.kind).filter(Boolean);
    if (pairs.length === 0) return { query: '', variant: kinds.join(', ') };
    // One in ten as typed, unencoded: `%zz`, spaces and `&` inside a value reach the server as they are.
    const raw = rawDraw === 0;
    const query = raw ? pairs.map(([k, v]) => `${k}=${v}`).join('&') : new URLSearchParams(pairs).toString();
    return {
      query: `?${query.slice(0, LONGEST_QUERY)}`,
      variant: [...kinds, raw ? 'raw query' : ''].filter(Boolean).join(', '),
    };
  });
  // A real label file downloads only with its own signed query: as often as anything else.
  const signed = account.pools.labelFiles.find((f) => f.file === pathValues.file);
  if (!signed) return generated;
  const signedQuery = new URLSearchParams({ expires: signed.expires, signature: signed.signature });
  return fc.oneof(generated, fc.constant({ query: `?${signedQuery}`, variant: 'signed query' }));
}

function validQueryValue(
  pools: Pools,
  param: Parameter,
  pathValues: Record<string, string>,
): fc.Arbitrary<string> {
  const schema = param.schema;
  if (Array.isArray(schema.enum) && schema.enum.length > 0)
    return fc.constantFrom(...schema.enum.map(String));
  const linkedFile = pools.labelFiles.find((f) => f.file === pathValues.file);
  switch (param.name) {
    case 'limit':
      return fc.integer({ min: 1, max: 100 }).map(String);
    case 'cursor':
      return pools.cursors.length ? fc.constantFrom(...pools.cursors) : fc.constant('');
    case 'event':
      return fc.constantFrom(...pools.events);
    case 'carrier':
      return fc.constantFrom(...pools.carriers);
    case 'expires':
    case 'signature': {
      // The pre-signed URL's own values when the path names a real file: only that pair downloads.
      const real = linkedFile?.[param.name];
      const tampered = real ? `${real.slice(0, -1)}${real.endsWith('0') ? '1' : '0'}` : undefined;
      return real && tampered
        ? fc.oneof({ weight: 4, arbitrary: fc.constant(real) }, fc.constant(tampered))
        : fc.string();
    }
    default:
      return typeof schema.example === 'string' ? fc.constant(schema.example) : fc.string({ maxLength: 20 });
  }
}

// ---------------------------------------------------------------------------------------------- body

interface BodyChoice {
  bytes?: Uint8Array<ArrayBuffer>;
  contentType: string | null;
  variant: string;
}

const JSON_TYPE = 'application/json';
/** Replaced by a raw number literal once the body is text. */
const RAW_SENTINEL = '\u0000fuzz-raw-number\u0000';
const OVERSIZED_BYTES = 1024 * 1024 + 100;

function bodyArbitrary(context: RequestContext): fc.Arbitrary<BodyChoice> {
  const { operation, receiver } = context;
  const canHaveBody = operation.method !== 'GET';
  if (!canHaveBody) return fc.constant({ contentType: null, variant: '' });
  const json = (value: unknown, variant: string, contentType: string | null = JSON_TYPE): BodyChoice => ({
    bytes: encodeUtf8(JSON.stringify(keepUrlsOnLoopback(value, receiver.url))),
    contentType,
    variant,
  });
  const text = (body: string, variant: string, contentType: string | null = JSON_TYPE): BodyChoice => ({
    bytes: encodeUtf8(body),
    contentType,
    variant,
  });

  if (!operation.body) {
    return fc.oneof(
      { weight: 12, arbitrary: fc.constant({ contentType: null, variant: '' }) },
      { weight: 1, arbitrary: fc.constant(json({}, 'empty object body')) },
      { weight: 1, arbitrary: garbageValue().map((v) => json(v, 'unexpected body')) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(...BROKEN_BODIES).map((b) => text(b, 'unexpected broken body')),
      },
    );
  }

  const hintContext = hints(context);
  const valid = arbitraryOf(operation.body, { ...hintContext, realistic: false });
  const realistic = arbitraryOf(operation.body, { ...hintContext, realistic: true });
  const base = fc.oneof(realistic, valid);
  return fc.oneof(
    { weight: 6, arbitrary: valid.map((v) => json(v, 'valid body')) },
    { weight: 8, arbitrary: realistic.map((v) => json(v, 'realistic body')) },
    {
      weight: 14,
      arbitrary: fc.tuple(base, mutationArbitrary()).map(([v, m]) => applyMutation(v, m, receiver.url)),
    },
    { weight: 2, arbitrary: fc.constantFrom(...BROKEN_BODIES).map((b) => text(b, 'broken JSON')) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(realistic, fc.constantFrom(...CONTENT_TYPES))
        .map(([v, type]) => json(v, `content type ${JSON.stringify(type)}`, type)),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom<BodyChoice>(
        { contentType: JSON_TYPE, variant: 'no body' },
        { contentType: null, variant: 'no body, no content type' },
        text('', 'empty body'),
        text('   \n', 'blank body'),
      ),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          [0xff, 0xfe, 0xfd],
          [0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d],
          [0x7b, 0x7d, 0x00, 0xff],
        )
        .map((bytes) => ({
          bytes: Uint8Array.from(bytes),
          contentType: JSON_TYPE,
          variant: 'invalid UTF-8',
        })),
    },
    {
      weight: 1,
      arbitrary: fc.constant(
        text(JSON.stringify({ padding: 'z'.repeat(OVERSIZED_BYTES) }), 'body over 1 MiB'),
      ),
    },
  );
}

/** Addresses that pass verification, in several countries, and one of the magic undeliverable ones. */
const ADDRESSES = [
  {
    name: 'Ada Lovelace',
    company: 'Analytical Engines',
    address1: '417 Montgomery St',
    address2: 'Floor 5',
    city: 'San Francisco',
    state: 'CA',
    zip: '94104',
    country: 'US',
  },
  {
    name: 'Grace Hopper',
    address1: '350 5th Ave',
    city: 'New York',
    state: 'NY',
    zip: '10118',
    country: 'US',
  },
  {
    name: 'Katherine Johnson',
    address1: '233 S Wacker Dr',
    city: 'Chicago',
    state: 'IL',
    zip: '60606-6306',
    country: 'US',
  },
  {
    name: 'Alan Turing',
    address1: '10 Downing St',
    city: 'London',
    state: 'London',
    zip: 'SW1A 2AA',
    country: 'GB',
  },
  {
    name: 'Emmy Noether',
    address1: 'Unter den Linden 6',
    city: 'Berlin',
    state: 'BE',
    zip: '10117',
    country: 'DE',
  },
  {
    name: 'Donna Strickland',
    address1: '290 Bremner Blvd',
    city: 'Toronto',
    state: 'ON',
    zip: 'M5V 3L9',
    country: 'CA',
  },
  {
    name: 'Nobody',
    address1: '1 Undeliverable Way',
    city: 'Nowhere',
    state: 'NY',
    zip: '10118',
    country: 'US',
  },
];

/** Values worth trying for named properties of request bodies: the account's own, or loopback. */
function hints({ document, account, receiver }: RequestContext) {
  const { pools } = account;
  const port = new URL(receiver.url).port;
  const table: Record<string, fc.Arbitrary<unknown>> = {
    Address: fc.constantFrom(...ADDRESSES),
    shipment_id: pools.shipments.length ? fc.constantFrom(...pools.shipments) : fc.constant('shp_none'),
    url: fc.constantFrom(
      receiver.url,
      receiver.failingUrl,
      `http://localhost:${port}/hooks`,
      'http://127.0.0.1:9/closed-port',
      'https://127.0.0.1:9/tls-closed-port',
      'http://[::1]:9/ipv6',
    ),
    'ScenarioRequest.name': fc.constantFrom(...pools.scenarios),
    default_scenario: fc.constantFrom(...pools.scenarios),
    carrier: fc.constantFrom(...pools.carriers),
    service: fc.constantFrom(...pools.services),
    'AdvanceClock.by': fc.constantFrom('1m', '1h', '1d', '30d', 60, 3600, 86_400),
    'AdvanceClock.to': fc
      .integer({ min: -86_400, max: 30 * 86_400 })
      .map((s) => `${new Date(Date.now() + s * 1000).toISOString().slice(0, 19)}Z`),
  };
  return {
    resolve: (ref: string) => document.resolve(ref),
    hint: (name: string) => table[name],
  };
}

type MutationKind = 'missing' | 'wrong value' | 'raw number' | 'extra property' | 'duplicate key';

interface Mutation {
  kind: MutationKind;
  /** Which place in the body, modulo the places there are. */
  pick: number;
  garbage: unknown;
  literal: string;
  key: string;
}

function mutationArbitrary(): fc.Arbitrary<Mutation> {
  return fc.record({
    kind: fc.constantFrom<MutationKind>(
      'missing',
      'wrong value',
      'raw number',
      'extra property',
      'duplicate key',
    ),
    pick: fc.nat(),
    garbage: garbageValue(),
    literal: fc.constantFrom(...RAW_NUMBER_LITERALS),
    key: fc.constantFrom(...HOSTILE_KEYS),
  });
}

type Place = { parent: Record<string, unknown> | unknown[]; key: string | number; path: string };

/** Every place in a value where a field or an item sits, depth first. */
function placesOf(value: unknown, path = ''): Place[] {
  if (value === null || typeof value !== 'object') return [];
  const entries: [string | number, unknown][] = Array.isArray(value)
    ? value.map((item, i) => [i, item])
    : Object.entries(value);
  return entries.flatMap(([key, child]) => {
    const here = path ? `${path}.${key}` : String(key);
    return [{ parent: value as Record<string, unknown>, key, path: here }, ...placesOf(child, here)];
  });
}

function objectsOf(value: unknown, path = ''): { object: Record<string, unknown>; path: string }[] {
  if (value === null || typeof value !== 'object') return [];
  const own = Array.isArray(value)
    ? []
    : [{ object: value as Record<string, unknown>, path: path || '(top)' }];
  const children = Object.entries(value).flatMap(([key, child]) =>
    objectsOf(child, path ? `${path}.${key}` : key),
  );
  return [...own, ...children];
}

function setOwn(target: Record<string, unknown> | unknown[], key: string | number, value: unknown) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** One mutation of a valid body: the shape is right but for one place. */
function applyMutation(original: unknown, mutation: Mutation, receiverUrl: string): BodyChoice {
  const value = structuredClone(keepUrlsOnLoopback(original, receiverUrl));
  const places = placesOf(value);
  const place = places.length ? places[mutation.pick % places.length] : undefined;
  const done = (body: unknown, variant: string, literal?: string): BodyChoice => {
    let text = JSON.stringify(keepUrlsOnLoopback(body, receiverUrl));
    if (literal !== undefined) text = text.replace(JSON.stringify(RAW_SENTINEL), literal);
    return { bytes: encodeUtf8(text), contentType: JSON_TYPE, variant };
  };

  switch (mutation.kind) {
    case 'missing': {
      const fields = places.filter((p) => !Array.isArray(p.parent));
      const field = fields.length ? fields[mutation.pick % fields.length] : undefined;
      if (!field) return done(value, 'valid body');
      delete (field.parent as Record<string, unknown>)[field.key];
      return done(value, `missing ${field.path}`);
    }
    case 'wrong value':
      if (!place) return done(mutation.garbage, 'body replaced by a non-object');
      setOwn(place.parent, place.key, mutation.garbage);
      return done(value, `wrong value at ${place.path}`);
    case 'raw number':
      if (!place) return done(RAW_SENTINEL, `body ${mutation.literal}`, mutation.literal);
      setOwn(place.parent, place.key, RAW_SENTINEL);
      return done(value, `${mutation.literal} at ${place.path}`, mutation.literal);
    case 'extra property': {
      const objects = objectsOf(value);
      const target = objects.length ? objects[mutation.pick % objects.length] : undefined;
      if (!target) return done(value, 'valid body');
      setOwn(target.object, mutation.key, mutation.garbage);
      return done(value, `extra property ${JSON.stringify(mutation.key.slice(0, 20))} at ${target.path}`);
    }
    case 'duplicate key': {
      const text = JSON.stringify(value);
      const keys = value && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : [];
      const key = keys.length ? keys[mutation.pick % keys.length] : undefined;
      if (key === undefined || !text.endsWith('}')) return done(value, 'valid body');
      const garbage = JSON.stringify(keepUrlsOnLoopback(mutation.garbage, receiverUrl)) ?? 'null';
      // The later duplicate wins in JSON.parse; a parser that kept the first would see a valid body.
      const duplicated = `${text.slice(0, -1)}${text === '{}' ? '' : ','}${JSON.stringify(key)}:${garbage}}`;
      return { bytes: encodeUtf8(duplicated), contentType: JSON_TYPE, variant: `duplicate key ${key}` };
    }
  }
}
