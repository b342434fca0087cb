import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import { testConfig } from '../src/config/index.js';
import { FragmentCodec } from '../src/core/fragments.js';
import { END_OF_TIME } from '../src/core/time.js';
import { LEGACY_MIGRATIONS } from '../src/db/legacy-migrations.js';
import { SqliteSql } from '../src/db/sqlite.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { packShipmentBody, unpackShipmentBody } from '../src/shipments/body-packing.js';
import type { ShipmentStatus } from '../src/shipments/schema.js';
import { presentShipment, type ShipmentRecord, ShipmentStore } from '../src/shipments/store.js';
import {
  createTestSandbox,
  DEFAULT_KEY,
  openMigratedDatabase,
  PARCEL,
  shipmentRequest,
  type TestSandbox,
  US_DESTINATION,
  US_ORIGIN,
} from './helpers.js';

const T0 = Date.UTC(2026, 10, 22, 8, 0, 0);

/**
 * What every read of the shipment answers, checked against its row: the JSON kept with the row must
 * say what the row's own columns (status, tracking number, cancellation) say after every change.
 */
async function expectReadsAgree(sandbox: TestSandbox, id: string, key?: string) {
  const store = sandbox.stores.shipments;
  const read = await sandbox.call('GET', `/v1/shipments/${id}`, { key });
  expect(read.status).toBe(200);
  const record = (await store.find(sandbox.db, await accountOf(sandbox, id), id)) as ShipmentRecord;
  expect(read.text).toBe(JSON.stringify(presentShipment(record)));
  const listed = await sandbox.call('GET', '/v1/shipments?limit=100', { key });
  expect(listed.text).toContain(read.text);
  const found = await sandbox.call('GET', `/_sandbox/shipments?q=${id}`, { key });
  expect(found.text).toBe(`{"data":[${read.text}]}`);
  return read;
}

const accountOf = async (sandbox: TestSandbox, id: string) =>
  (await sandbox.db.value<string>('SELECT account_id FROM shipments WHERE id = ?', [id])) as string;

describe("a shipment's JSON, kept with its row", () => {
  it('is what its creation answered, and follows every change of status, label and tracking', async () => {
    const sandbox = await createTestSandbox();
    const created = await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() });
    const { id } = created.json as { id: string };
    expect((await expectReadsAgree(sandbox, id)).text).toBe(created.text);

    const label = await sandbox.call('POST', '/v1/labels', { body: { shipment_id: id } });
    const linked = await expectReadsAgree(sandbox, id);
    expect(linked.json).toMatchObject({
      status: 'label_generated',
      label_id: label.json.id,
      tracking_number: label.json.tracking_number,
    });

    await sandbox.call('DELETE', `/v1/labels/${label.json.id}`);
    const voided = await expectReadsAgree(sandbox, id);
    expect(voided.text).toBe(created.text);

    const second = await sandbox.call('POST', '/v1/labels', { body: { shipment_id: id } });
    await sandbox.call('POST', `/_sandbox/shipments/${id}/advance`, { body: { status: 'in_transit' } });
    expect((await expectReadsAgree(sandbox, id)).json).toMatchObject({
      status: 'in_transit',
      label_id: second.json.id,
    });
    await sandbox.call('POST', `/_sandbox/shipments/${id}/advance`, { body: { status: 'delivered' } });
    expect((await expectReadsAgree(sandbox, id)).json.status).toBe('delivered');

    const other = await sandbox.newShipment();
    await sandbox.call('POST', '/v1/labels', { body: { shipment_id: other.id } });
    sandbox.wall.now += 90_500;
    const cancelled = await sandbox.call('DELETE', `/v1/shipments/${other.id}`);
    const read = await expectReadsAgree(sandbox, other.id);
    // Cancelling voided the label first, which unlinked it.
    expect(read.json).toMatchObject({
      status: 'cancelled',
      cancelled_at: cancelled.json.cancelled_at,
      label_id: null,
      tracking_number: null,
    });
  });

  it('pages as it did: a page joins the rows, around the meta the list always wrote', async () => {
    const sandbox = await createTestSandbox();
    for (let i = 0; i < 5; i++) await sandbox.newShipment({ reference: `order-${i}` });
    const pages: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await sandbox.call('GET', `/v1/shipments?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.text).toBe(JSON.stringify(page.json));
      pages.push(...page.json.data.map((shipment: { reference: string }) => shipment.reference));
      cursor = page.json.meta.cursor;
    } while (cursor);
    expect(pages).toEqual(['order-4', 'order-3', 'order-2', 'order-1', 'order-0']);
    const empty = await sandbox.call('GET', '/v1/shipments?status=delivered');
    expect(empty.text).toBe('{"data":[],"meta":{"total":0,"cursor":null,"has_more":false}}');
  });

  it('answers a reference with a lone surrogate as SQLite keeps it, as reads always did', async () => {
    const sandbox = await createTestSandbox();
    const created = await sandbox.call('POST', '/v1/shipments', {
      body: shipmentRequest({
        reference: 'half \ud83d of an emoji',
        to: { ...US_DESTINATION, name: 'Ann \udc00' },
      }),
    });
    // The creation answers what it was sent; the row's text column holds UTF-8, which has no lone
    // surrogates, and the addresses are JSON text, which escapes them.
    expect(created.text).toContain('"reference":"half \\ud83d of an emoji"');
    const read = await expectReadsAgree(sandbox, created.json.id);
    expect(read.json.reference).not.toBe(created.json.reference);
    expect(read.json.reference).toMatch(/^half \ufffd+ of an emoji$/);
    expect(read.text).toContain('"name":"Ann \\udc00"');
  });
});

describe("a shipment's JSON, stored packed", () => {
  const example = (overrides: Partial<Parameters<typeof presentShipment>[0]> = {}) =>
    JSON.stringify(
      presentShipment({
        id: 'shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2',
        status: 'created',
        carrier: 'usps',
        service: 'ground_advantage',
        rate: { amount: '12.88', currency: 'USD' },
        from: US_ORIGIN,
        to: US_DESTINATION,
        parcel: PARCEL,
        reference: 'order-1042',
        trackingNumber: null,
        labelId: null,
        createdAt: T0,
        cancelledAt: null,
        ...overrides,
      }),
    );

  it('reads back byte for byte, whatever the text (JSON or not)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(unpackShipmentBody(packShipmentBody(`{${text}`))).toBe(`{${text}`);
      }),
    );
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: 'binary' }), (value, name) => {
        const json = example({ from: { ...US_ORIGIN, name }, reference: JSON.stringify(value) });
        expect(unpackShipmentBody(packShipmentBody(json))).toBe(json);
      }),
    );
  });

  it('is under two fifths of its text for the example shipment, labelled or not', () => {
    const created = example();
    expect(packShipmentBody(created).length).toBeLessThan(created.length * 0.4);
    const labelled = example({
      status: 'label_generated',
      trackingNumber: '9400100000000000000000',
      labelId: 'lbl_01',
    });
    expect(packShipmentBody(labelled).length).toBeLessThan(labelled.length * 0.45);
  });

  it('keeps text holding raw control characters as it is, and reads rows written before packing', () => {
    expect(packShipmentBody('{"a":"\u0001"}')).toBe('{"a":"\u0001"}');
    const plain = example();
    expect(unpackShipmentBody(plain)).toBe(plain);
  });

  it('keeps reading format 1 (a format that has shipped must never change)', () => {
    // Packed in format 1 when it shipped; editing its table of fragments would break stored rows.
    const stored =
      '\u0001\u000101JD3S5Z7QK2N8W4X6Y9A0B1C2\u0002\u0007ground_advantage\u000b12.88\u000cAda Lovelace' +
      '\u001eAnalytical Engines\u000d417 Montgomery St\u001f!Floor 5\u000eSan Francisco\u000fCA\u001094104' +
      '\u0011US\u0012Grace Hopper\u000d350 5th Ave\u000eNew York\u000fNY\u001010118\u0011US\u00131200\u001430' +
      '\u001520\u001610\u0017"order-1042"\u00182026-11-22T08:00:00Z\u001c';
    expect(unpackShipmentBody(stored)).toBe(example());
    expect(packShipmentBody(example())).toBe(stored);
  });

  it('names its format, and an unknown format or code is an error, not garbage', () => {
    expect(() => unpackShipmentBody('\u0009{}')).toThrow(/unknown format \(9\)/);
    expect(() => unpackShipmentBody('\u0001{\u001f~}')).toThrow(/code/);
    expect(() => new FragmentCodec(Array.from({ length: 125 }, (_, i) => `"${i}"`))).toThrow(/124/);
  });
});

describe('the migration that keeps JSON with each shipment', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  const KEEPS_JSON = LEGACY_MIGRATIONS.findIndex((sql) =>
    sql.includes('ALTER TABLE shipments ADD COLUMN body TEXT'),
  );

  /** Shipments as schemas 1 to 12 stored them, with the texts and instants that are hardest to write. */
  const OLD_ROWS = [
    { reference: null, created_at: T0, cancelled_at: null, status: 'created' },
    {
      reference: 'quote " backslash \\ slash /',
      created_at: T0 + 999,
      cancelled_at: T0 + 61_999,
      status: 'cancelled',
    },
    {
      reference: 'controls \u0000\u0001\b\f\n\r\t\u001f\u007f',
      created_at: T0 + 1_000,
      cancelled_at: null,
      status: 'created',
    },
    {
      reference: 'unicode é 中文 😀 \u2028\u2029 </script>',
      created_at: -1_500,
      cancelled_at: null,
      status: 'in_transit',
    },
    {
      reference: 'lone \ud800 surrogate',
      created_at: END_OF_TIME + 5_000,
      cancelled_at: null,
      status: 'delivered',
    },
    { reference: '', created_at: 0, cancelled_at: END_OF_TIME + 86_400_000, status: 'cancelled' },
  ] as const;

  function oldDatabase(file: string) {
    const db = new Database(file);
    db.pragma('foreign_keys = ON');
    for (const migration of LEGACY_MIGRATIONS.slice(0, KEEPS_JSON)) db.exec(migration);
    db.pragma(`user_version = ${KEEPS_JSON}`);
    db.prepare(
      `INSERT INTO accounts (id, name, plan, created_at, clock_anchor_real, clock_anchor_virtual, clock_speed)
       VALUES (?, 'A', 'growth', ?, ?, ?, 1)`,
    ).run(DEFAULT_ACCOUNT.id, T0, T0, T0);
    const insert = db.prepare(
      `INSERT INTO shipments (id, account_id, status, carrier, service, rate_amount, rate_currency, from_address,
         to_address, parcel, reference, tracking_number, label_id, created_at, cancelled_at)
       VALUES (@id, @account, @status, 'ups', 'ground', '24.12', 'USD', @from, @to, @parcel, @reference,
         @trackingNumber, @labelId, @created_at, @cancelled_at)`,
    );
    for (const [i, row] of OLD_ROWS.entries()) {
      insert.run({
        ...row,
        id: `shp_old${i}`,
        account: DEFAULT_ACCOUNT.id,
        from: JSON.stringify({ ...US_ORIGIN, name: `Zoë "${i}" \\ \u0001 \ud801` }),
        to: JSON.stringify({ ...US_DESTINATION, company: '\u2028 ✓' }),
        parcel: JSON.stringify({ ...PARCEL, weight: 1200 + i }),
        trackingNumber: i % 2 ? `1Z${i}` : null,
        labelId: i % 2 ? `lbl_old${i}` : null,
      });
    }
    return db;
  }

  interface OldRow {
    id: string;
    status: ShipmentStatus;
    carrier: string;
    service: string;
    rate_amount: string;
    rate_currency: string;
    from_address: string;
    to_address: string;
    parcel: string;
    reference: string | null;
    tracking_number: string | null;
    label_id: string | null;
    created_at: number;
    cancelled_at: number | null;
  }

  /** How reads answered before: the row's columns parsed and the shipment serialised again. */
  function answeredBefore(db: Database.Database): Map<string, string> {
    const rows = db.prepare('SELECT * FROM shipments').all() as OldRow[];
    return new Map(
      rows.map((row) => [
        row.id,
        JSON.stringify(
          presentShipment({
            id: row.id,
            status: row.status,
            carrier: row.carrier,
            service: row.service,
            rate: { amount: row.rate_amount, currency: row.rate_currency },
            from: JSON.parse(row.from_address),
            to: JSON.parse(row.to_address),
            parcel: JSON.parse(row.parcel),
            reference: row.reference,
            trackingNumber: row.tracking_number,
            labelId: row.label_id,
            createdAt: row.created_at,
            cancelledAt: row.cancelled_at,
          }),
        ),
      ]),
    );
  }

  it('fills each row with the bytes reads answered before, keeps every row, and drops the columns it replaces', async () => {
    expect(KEEPS_JSON).toBeGreaterThan(0);
    const dir = mkdtempSync(join(tmpdir(), 'sandbox-shipment-json-'));
    dirs.push(dir);
    const file = join(dir, 'sandbox.db');
    const old = oldDatabase(file);
    const before = answeredBefore(old);
    const counts = old.prepare('SELECT * FROM shipment_counts ORDER BY status').all();
    old.close();

    const db = openMigratedDatabase(file);
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(LEGACY_MIGRATIONS.length + 1);
      const sql = new SqliteSql(db);
      const store = new ShipmentStore(sql);
      for (const [id, text] of before) expect(await store.findJson(DEFAULT_ACCOUNT.id, id), id).toBe(text);
      expect(before.size).toBe(OLD_ROWS.length);
      const page = await store.page(DEFAULT_ACCOUNT.id, {}, 100, undefined);
      expect(page.bodies.map((body) => JSON.parse(body).id)).toEqual([
        'shp_old4',
        'shp_old2',
        'shp_old1',
        'shp_old0',
        'shp_old5',
        'shp_old3',
      ]);
      expect(db.prepare('SELECT * FROM shipment_counts ORDER BY status').all()).toEqual(counts);
      const columns = (db.pragma('table_info(shipments)') as { name: string }[]).map((column) => column.name);
      expect(columns).toEqual([
        'seq',
        'id',
        'account_id',
        'status',
        'carrier',
        'reference',
        'tracking_number',
        'created_at',
        'cancelled_at',
        'body',
        // Schema 16's: the account's key, which the indexes lead with.
        'account_key',
      ]);
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(db.pragma('foreign_key_check')).toEqual([]);

      // The rows go on changing as new ones do: the JSON is rewritten from the record it holds.
      const record = (await store.find(sql, DEFAULT_ACCOUNT.id, 'shp_old0')) as ShipmentRecord;
      await store.setStatus(sql, record, 'cancelled', T0 + 5_000);
      expect(JSON.parse((await store.findJson(DEFAULT_ACCOUNT.id, 'shp_old0')) as string)).toEqual({
        ...JSON.parse(before.get('shp_old0') as string),
        status: 'cancelled',
        cancelled_at: '2026-11-22T08:00:05Z',
      });
    } finally {
      db.close();
    }
  });
});

describe('API answers on the wire', () => {
  /** The header lines of an answer, values of the ones that change per request left out. */
  async function headerLines(origin: string, method: string, path: string, body?: string): Promise<string[]> {
    const { hostname, port } = new URL(origin);
    const socket = connect(Number(port), hostname);
    const lines = [
      `${method} ${path} HTTP/1.1`,
      `Host: ${hostname}:${port}`,
      `Authorization: Bearer ${DEFAULT_KEY}`,
      'Content-Type: application/json',
      'Connection: close',
      ...(body === undefined ? [] : [`Content-Length: ${Buffer.byteLength(body)}`]),
    ];
    socket.end(`${lines.join('\r\n')}\r\n\r\n${body ?? ''}`);
    let answer = '';
    for await (const chunk of socket) answer += chunk;
    return answer
      .slice(0, answer.indexOf('\r\n\r\n'))
      .split('\r\n')
      .map((line) => line.replace(/^(X-RateLimit-\w+|Date|Content-Length): .*/i, '$1: …'));
  }

  it('go out with the same header lines, whether a route sends JSON text or Hono serialises it', async () => {
    const sandbox = (await startServer(testConfig(), undefined, { https: false })) as RunningSandbox;
    try {
      const created = await headerLines(
        sandbox.origin,
        'POST',
        '/v1/shipments',
        JSON.stringify(shipmentRequest()),
      );
      const serialisedByHono = await headerLines(sandbox.origin, 'GET', '/v1/webhooks');
      const form = [
        'content-type: application/json',
        'x-content-type-options: nosniff',
        'x-ratelimit-limit: …',
        'x-ratelimit-remaining: …',
        'x-ratelimit-reset: …',
        'Content-Length: …',
        'Date: …',
        'Connection: close',
      ];
      expect(serialisedByHono).toEqual(['HTTP/1.1 200 OK', ...form]);
      expect(created).toEqual(['HTTP/1.1 201 Created', ...form]);
      expect(await headerLines(sandbox.origin, 'GET', '/v1/shipments')).toEqual(['HTTP/1.1 200 OK', ...form]);
      const list = await fetch(`${sandbox.origin}/v1/shipments`, {
        headers: { authorization: `Bearer ${DEFAULT_KEY}` },
      });
      const { id } = ((await list.json()) as { data: { id: string }[] }).data[0] as { id: string };
      expect(await headerLines(sandbox.origin, 'GET', `/v1/shipments/${id}`)).toEqual([
        'HTTP/1.1 200 OK',
        ...form,
      ]);
      // HEAD answers what the GET would, without a body or its length.
      expect(await headerLines(sandbox.origin, 'HEAD', `/v1/shipments/${id}`)).toEqual([
        'HTTP/1.1 200 OK',
        ...form.filter((line) => !line.startsWith('Content-Length')),
      ]);
    } finally {
      await sandbox.close();
    }
  });
});

describe('the tracking-number index', () => {
  it('holds labelled shipments only, and a search by tracking number still reads it', async () => {
    const sandbox = await createTestSandbox();
    const definition = await sandbox.db.value(
      "SELECT sql FROM sqlite_schema WHERE name = 'shipments_by_tracking_number'",
    );
    expect(definition).toMatch(
      /ON shipments \(account_key, tracking_number\)\s+WHERE tracking_number IS NOT NULL$/,
    );
    const { id } = await sandbox.newShipment();
    await sandbox.newShipment();
    const label = await sandbox.call('POST', '/v1/labels', { body: { shipment_id: id } });
    const found = await sandbox.call('GET', `/_sandbox/shipments?q=${label.json.tracking_number}`);
    expect(found.json.data.map((shipment: { id: string }) => shipment.id)).toEqual([id]);
    const plan = await sandbox.db.all<{ detail: string }>(
      'EXPLAIN QUERY PLAN SELECT seq FROM shipments WHERE account_key = ? AND tracking_number = ? LIMIT 10',
      [1, 'number'],
    );
    expect(plan.map((step) => step.detail)).toEqual([
      expect.stringMatching(/USING COVERING INDEX shipments_by_tracking_number/),
    ]);
  });
});
