import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { newId } from '../src/core/ids.js';
import { CursorCodec } from '../src/core/paging.js';
import { type Db, MEMORY_PAGE_CACHE_KIB, MEMORY_PAGE_SIZE } from '../src/db/database.js';
import { LEGACY_MIGRATIONS } from '../src/db/legacy-migrations.js';
import { ALWAYS_GRANTED } from '../src/db/memory-permit.js';
import { SqliteSql } from '../src/db/sqlite.js';
import { packBody, packEnvelope, storedBody, unpackBody } from '../src/events/packing.js';
import { EVENT_TYPES } from '../src/events/schema.js';
import { EventStore } from '../src/events/store.js';
import type { ShipmentList } from '../src/shipments/schema.js';
import { ShipmentService } from '../src/shipments/service.js';
import { ShipmentStore } from '../src/shipments/store.js';
import { createTestSandbox, openMigratedDatabase, PARCEL, US_DESTINATION, US_ORIGIN } from './helpers.js';

const T0 = Date.UTC(2026, 10, 22, 8, 0, 0);

/** Pages of each index, and the share of their bytes that is empty (SQLite's dbstat). */
function indexPages(db: Db, name: string): { pages: number; unusedShare: number } {
  const row = db
    .prepare(
      'SELECT count(*) AS pages, sum(unused) AS unused, sum(pgsize) AS size FROM dbstat WHERE name = ?',
    )
    .get(name) as { pages: number; unused: number; size: number };
  return { pages: row.pages, unusedShare: row.unused / row.size };
}

describe('event bodies, packed', () => {
  const envelope = (data: unknown) =>
    JSON.stringify({
      id: newId('evt', T0),
      event: 'shipment.created',
      created_at: '2026-11-22T08:00:00Z',
      data,
    });

  it('read back byte for byte, whatever the text', () => {
    for (const body of [
      envelope({ id: 'shp_1', from: US_ORIGIN, to: US_DESTINATION, parcel: PARCEL, reference: null }),
      envelope({ name: 'Zoë Ångström 東京 🚚', note: 'quote " backslash \\ newline \n tab \t \u0001' }),
      // Fragments inside values, and codes' look-alikes written as JSON escapes.
      envelope({ reference: '","city":"x\\u0001 null}} ?expires= \\"},{"status":"' }),
      envelope({}),
      envelope({ long: 'x'.repeat(100_000) }),
      '',
    ]) {
      const packed = packBody(body);
      expect(packed[0]).toBe(1);
      expect(unpackBody(packed)).toBe(body);
      expect(storedBody({ body: '', packed })).toBe(body);
    }
  });

  it('keep the codes of the format that has shipped: a fragment of one character, then one of two from A', () => {
    expect([...packBody('{"id":"evt_x"},{"status":"')]).toEqual([1, 0x01, ...Buffer.from('x'), 0x1f, 0x41]);
    expect(unpackBody(Buffer.from([1, 0x1f, 0x41]))).toBe('"},{"status":"');
  });

  it('read back byte for byte for every event type, as the API records them, at under two thirds of their text', async () => {
    const sandbox = await createTestSandbox();
    await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
    // One journey of each kind: a void, a cancel with a label, and a parcel through an exception to delivery.
    for (const ending of ['void', 'cancel', 'deliver'] as const) {
      const shipment = await sandbox.newShipment({ reference: `order "${ending}" \u00e9` });
      const label = (await sandbox.call('POST', '/v1/labels', { body: { shipment_id: shipment.id } })).json;
      if (ending === 'void') await sandbox.call('DELETE', `/v1/labels/${label.id}`);
      if (ending === 'cancel') await sandbox.call('DELETE', `/v1/shipments/${shipment.id}`);
      if (ending === 'deliver') {
        for (const status of ['exception', 'delivered'])
          await sandbox.call('POST', `/_sandbox/shipments/${shipment.id}/advance`, { body: { status } });
      }
    }
    const rows = await sandbox.db.all<{
      id: string;
      type: string;
      created_at: number;
      body: string;
      packed: Buffer;
    }>('SELECT id, type, created_at, body, packed FROM events');
    expect(new Set(rows.map((row) => row.type))).toEqual(new Set(EVENT_TYPES));
    const listed = (await sandbox.call('GET', '/_sandbox/events?limit=1000')).text;
    for (const row of rows) {
      // Stored without the head its row's columns hold (format 2, schema 16 on).
      expect(row.packed[0]).toBe(2);
      const body = storedBody(row);
      expect(packEnvelope(body, row).equals(row.packed)).toBe(true);
      // The envelope is the JSON of what the list shows, and the list shows it unchanged.
      expect(JSON.stringify(JSON.parse(body))).toBe(body);
      expect(listed).toContain(body);
      expect(row.packed.length).toBeLessThan(Buffer.byteLength(body) * 0.65);
    }
  });

  it('leave out the id and time their row holds (format 2), and read back with the row byte for byte', () => {
    const row = { id: newId('evt', T0 + 1_500), type: 'shipment.created', created_at: T0 + 1_500 };
    for (const data of [
      '{"id":"shp_1","status":"created"}',
      JSON.stringify({ name: 'Zoë 東京 🚚', text: '","created_at":"\u0001 {"id":"evt_' }),
      '{}',
    ]) {
      const body = `{"id":"${row.id}","event":"shipment.created","created_at":"2026-11-22T08:00:01Z","data":${data}}`;
      const packed = packEnvelope(body, row);
      expect(packed[0]).toBe(2);
      expect(packed.length).toBe(packBody(body).length - 46);
      expect(storedBody({ ...row, body: '', packed })).toBe(body);
      expect(() => storedBody({ body: '', packed })).toThrow(/with its row/);
      expect(() => unpackBody(packed)).toThrow(/with its row/);
      expect(() => storedBody({ ...row, type: 'label.voided', body: '', packed })).toThrow(/not of its row/);
    }
    // An envelope that does not begin as its row says is kept whole, in format 1.
    const other = `{"id":"${row.id}","event":"shipment.created","created_at":"2026-11-22T08:00:02Z","data":{}}`;
    expect(packEnvelope(other, row)[0]).toBe(1);
    expect(storedBody({ ...row, body: '', packed: packEnvelope(other, row) })).toBe(other);
  });

  it('keep reading format 2 (a format that has shipped must never change)', () => {
    const row = { id: 'evt_01KMV0000000000000000000', type: 'label.voided', created_at: T0 };
    const packed = Buffer.from('AgEFIiwiZGF0YSI6e319', 'base64');
    // Written as format 2 shipped: format 1's codes, the head's id and time left out.
    expect(storedBody({ ...row, body: '', packed })).toBe(
      '{"id":"evt_01KMV0000000000000000000","event":"label.voided","created_at":"2026-11-22T08:00:00Z","data":{}}',
    );
  });

  it('keep text holding raw control characters as it is (JSON never has them)', () => {
    const text = `{"id":"evt_1",\u0001"city":"x",\u001fA}`;
    const packed = packBody(text);
    expect(packed[0]).toBe(0);
    expect(unpackBody(packed)).toBe(text);
  });

  it('are under half of their text for a shipment', () => {
    const body = envelope({
      id: newId('shp', T0),
      status: 'created',
      carrier: 'usps',
      service: 'ground_advantage',
      rate: { amount: '12.88', currency: 'USD' },
      from: { ...US_ORIGIN, name: 'Someone Else', address1: '1 Other Street' },
      to: { ...US_DESTINATION, name: 'Not In Any Table' },
      parcel: PARCEL,
      reference: 'order-77',
      tracking_number: null,
      label_id: null,
      created_at: '2026-11-22T08:00:00Z',
      cancelled_at: null,
    });
    expect(packBody(body).length).toBeLessThan(body.length * 0.45);
  });

  it('keep reading format 1 (a format that has shipped must never change)', () => {
    // Packed in format 1 when it shipped; editing its table of fragments would break stored events.
    const cancelled = Buffer.from(
      'AQEwMQMyMDI2LTExLTIyVDA4OjAwOjAwWgkwMQxjYW5jZWxsZWQZIjIwMjYtMTEtMjJUMDg6MDA6MDBaIn19',
      'base64',
    );
    expect(unpackBody(cancelled)).toBe(
      '{"id":"evt_01","event":"shipment.cancelled","created_at":"2026-11-22T08:00:00Z","data":{"id":"shp_01","status":"cancelled","cancelled_at":"2026-11-22T08:00:00Z"}}',
    );
    const generated = Buffer.from(
      'AQEwMQQyMDI2LTExLTIyVDA4OjAwOjAwWgowMR9GMDEfRzk0MDANdXNwcx9IcGRmH0lodHRwOi8vMTI3LjAuMC4xOjQwMTAfVTAxLnBkZh9WMR9XYWIfSjIwMjYtMTEtMjlUMDg6MDA6MDBaH0syMDI2LTExLTIyVDA4OjAwOjAwWh9T',
      'base64',
    );
    expect(unpackBody(generated)).toBe(
      '{"id":"evt_01","event":"label.generated","created_at":"2026-11-22T08:00:00Z","data":{"id":"lbl_01","shipment_id":"shp_01","tracking_number":"9400","carrier":"usps","format":"pdf","label_url":"http://127.0.0.1:4010/cdn/labels/lbl_01.pdf?expires=1&signature=ab","expires_at":"2026-11-29T08:00:00Z","created_at":"2026-11-22T08:00:00Z","status":"active"}}',
    );
  });

  it('name their format, and an unknown format or code is an error, not garbage', () => {
    const packed = packBody('{}');
    expect(() => unpackBody(Buffer.concat([Buffer.of(99), packed.subarray(1)]))).toThrow(/format \(99\)/);
    expect(() => unpackBody(Buffer.from('\u0001{\u001f~}'))).toThrow(/code/);
  });

  it('are stored packed, listed and delivered as recorded', async () => {
    const sandbox = await createTestSandbox();
    const shipment = await sandbox.newShipment();
    const rows = await sandbox.db.all<{
      id: string;
      body: string;
      packed: Buffer | null;
    }>('SELECT id, body, packed FROM events');
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row?.body).toBe('');
    expect(row?.packed).toBeInstanceOf(Buffer);
    const listed = await sandbox.call('GET', '/_sandbox/events');
    expect(listed.json.data[0]).toMatchObject({ id: row?.id, event: 'shipment.created', data: shipment });
    // What a webhook sends: the envelope exactly as it was serialised when recorded.
    expect(await sandbox.stores.events.body(sandbox.db, row?.id as string)).toBe(
      JSON.stringify(listed.json.data[0]),
    );
  });

  it('written before packing (text in `body`) are still read as they are', async () => {
    const sandbox = await createTestSandbox();
    const account = ((await sandbox.db.get('SELECT id FROM accounts')) as { id: string }).id;
    // Not what JSON.stringify would write (spaces, key order): it must come back untouched.
    const legacy =
      '{"id": "evt_legacy", "event": "shipment.cancelled", "created_at": "2026-11-22T08:00:00Z", "data": {"status": "cancelled", "id": "shp_x"}}';
    await sandbox.db.run(
      "INSERT INTO events (id, account_id, type, created_at, body) VALUES ('evt_legacy', ?, 'shipment.cancelled', ?, ?)",
      [account, T0, legacy],
    );
    expect(await sandbox.stores.events.body(sandbox.db, 'evt_legacy')).toBe(legacy);
    const listed = await sandbox.call('GET', '/_sandbox/events');
    expect(listed.json.data).toEqual([JSON.parse(legacy)]);
  });
});

describe('schema 7 (smaller indexes)', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    vi.restoreAllMocks();
  });

  /** An account and `count` shipments over time (three to a millisecond), written through the store. */
  async function seedShipments(db: Db, count: number) {
    const accountId = 'acct_storage';
    db.prepare(
      `INSERT INTO accounts (id, name, plan, created_at, clock_anchor_real, clock_anchor_virtual, clock_speed)
       VALUES (?, 'storage', 'growth', ?, ?, ?, 1)`,
    ).run(accountId, T0, T0, T0);
    const sql = new SqliteSql(db);
    const store = new ShipmentStore(sql);
    const carriers = ['usps', 'ups', 'fedex', 'dhl_express'];
    for (let i = 0; i < count; i++) {
      const { record } = await store.insert(sql, {
        id: `shp_${String(i).padStart(8, '0')}`,
        accountId,
        status: 'created',
        carrier: carriers[i % carriers.length] as string,
        service: 'ground',
        rate: { amount: '10.00', currency: 'USD' },
        from: US_ORIGIN,
        to: US_DESTINATION,
        parcel: PARCEL,
        reference: null,
        createdAt: T0 + Math.floor(i / 3),
      });
      if (i % 7 === 0) await store.setStatus(sql, record, 'cancelled', record.createdAt);
    }
    return { accountId, store, sql };
  }

  /** The same in the columns shipments had before their JSON was kept with them (schemas 1 to 12). */
  function seedOldShipments(db: Database.Database, count: number) {
    const accountId = 'acct_storage';
    db.prepare(
      `INSERT INTO accounts (id, name, plan, created_at, clock_anchor_real, clock_anchor_virtual, clock_speed)
       VALUES (?, 'storage', 'growth', ?, ?, ?, 1)`,
    ).run(accountId, T0, T0, T0);
    const insert = db.prepare(
      `INSERT INTO shipments (id, account_id, status, carrier, service, rate_amount, rate_currency,
         from_address, to_address, parcel, reference, created_at)
       VALUES (?, ?, 'created', 'ups', 'ground', '10.00', 'USD', ?, ?, ?, NULL, ?)`,
    );
    for (let i = 0; i < count; i++) {
      const [from, to, parcel] = [US_ORIGIN, US_DESTINATION, PARCEL].map((value) => JSON.stringify(value));
      insert.run(`shp_${String(i).padStart(8, '0')}`, accountId, from, to, parcel, T0 + Math.floor(i / 3));
    }
    return { accountId };
  }

  it('lists newest first through an index, for every filter, with and without a cursor', async () => {
    const db = openMigratedDatabase(':memory:');
    const { accountId, store, sql } = await seedShipments(db, 3_000);
    const prepared: string[] = [];
    const prepare = db.prepare.bind(db);
    vi.spyOn(db, 'prepare').mockImplementation(((sql: string) => {
      prepared.push(sql);
      return prepare(sql);
    }) as Db['prepare']);

    const shipments = new ShipmentService({
      db: sql,
      store,
      events: new EventStore(sql),
      cursors: new CursorCodec(Buffer.alloc(32, 7)),
      voidLabelOnCancel: async (_tx, _actor, shipment) => shipment,
      memory: ALWAYS_GRANTED,
    });
    const actor = { accountId, now: T0 };
    const all = db
      .prepare('SELECT id, status, carrier FROM shipments ORDER BY created_at DESC, seq DESC')
      .all() as { id: string; status: string; carrier: string }[];
    for (const filter of [
      {},
      { status: 'cancelled' },
      { carrier: 'ups' },
      { status: 'created', carrier: 'fedex' },
    ]) {
      const expected = all
        .filter((s) => Object.entries(filter).every(([k, v]) => s[k as 'status' | 'carrier'] === v))
        .map((s) => s.id);
      // Every page, following the cursor: the same order as a full sort, ties (same millisecond) by seq.
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = JSON.parse(
          await shipments.list(actor, { ...filter, limit: '100', cursor }),
        ) as ShipmentList;
        seen.push(...page.data.map((s) => s.id));
        expect(page.meta.total).toBe(expected.length);
        cursor = page.meta.cursor ?? undefined;
      } while (cursor);
      expect(seen).toEqual(expected);
    }

    const lists = [
      ...new Set(prepared.filter((sql) => /^SELECT [\w, ]+ FROM shipments WHERE account_(id|key)/.test(sql))),
    ];
    expect(lists.length).toBeGreaterThanOrEqual(8);
    for (const text of lists) {
      const plan = (
        db.prepare(`EXPLAIN QUERY PLAN ${text}`).all({
          accountId,
          status: 'created',
          carrier: 'ups',
          afterCreatedAt: T0,
          afterSeq: 1,
          take: 21,
          skip: 20,
        }) as { detail: string }[]
      ).map((step) => step.detail);
      // An index search in the list's order: no scan of the table, no sort of its rows (and the
      // account's key, looked up once: migration 16).
      expect(
        plan.filter((step) => !/^SCALAR SUBQUERY|^SEARCH account_keys /.test(step)),
        text,
      ).toEqual([expect.stringMatching(/^SEARCH shipments USING (COVERING )?INDEX shipments_page/)]);
    }
  });

  it('fills index pages as shipments and events are added in time order', async () => {
    const db = openMigratedDatabase(':memory:');
    const { accountId } = await seedShipments(db, 5_000);
    const insertEvent = db.prepare(
      "INSERT INTO events (id, account_id, type, created_at, body) VALUES (?, ?, 'shipment.created', ?, '{}')",
    );
    for (let i = 0; i < 5_000; i++) insertEvent.run(`evt_${i}`, accountId, T0 + i);
    for (const name of [
      'shipments_page',
      'shipments_page_by_status',
      'shipments_page_by_carrier',
      'events_by_account',
      'events_by_type',
    ]) {
      // Descending indexes (schema 6) took inserts at their front and were half empty (0.5).
      expect(indexPages(db, name).unusedShare, name).toBeLessThan(0.25);
    }
  });

  it('uses the default 4 KiB pages in memory (memdb copies changed pages at each commit) and in a file', () => {
    expect(MEMORY_PAGE_SIZE).toBe(4096);
    expect(openMigratedDatabase(':memory:').pragma('page_size', { simple: true })).toBe(4096);
    const dir = mkdtempSync(join(tmpdir(), 'sandbox-storage-'));
    dirs.push(dir);
    const file = openMigratedDatabase(join(dir, 'sandbox.db'));
    expect(file.pragma('page_size', { simple: true })).toBe(4096);
    file.close();
  });

  it('keeps an in-memory database whole past its bounded page cache, and rolls back', () => {
    const db = openMigratedDatabase(':memory:');
    expect(db.pragma('cache_size', { simple: true })).toBe(-MEMORY_PAGE_CACHE_KIB);
    expect(db.pragma('journal_mode', { simple: true })).toBe('memory');
    db.exec('CREATE TABLE blobs (n INTEGER PRIMARY KEY, data BLOB NOT NULL)');
    // Ten times the page cache: most pages are only in memdb's buffer, and all read back.
    const count = Math.ceil((MEMORY_PAGE_CACHE_KIB * 1024 * 10) / 10_000);
    const insert = db.prepare('INSERT INTO blobs (n, data) VALUES (?, ?)');
    const blob = (n: number) => Buffer.alloc(10_000, n % 251);
    db.transaction(() => {
      for (let n = 0; n < count; n++) insert.run(n, blob(n));
    })();
    const rows = db.prepare('SELECT n, data FROM blobs ORDER BY n').all() as { n: number; data: Buffer }[];
    expect(rows.length).toBe(count);
    expect(rows.every((row) => row.data.equals(blob(row.n)))).toBe(true);
    expect(() =>
      db.transaction(() => {
        db.prepare('DELETE FROM blobs').run();
        throw new Error('changed my mind');
      })(),
    ).toThrow('changed my mind');
    expect(db.prepare('SELECT count(*) FROM blobs').pluck().get()).toBe(count);
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
  });

  it('upgrades a database file of schema 6, keeping its rows and reading its events', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandbox-storage-'));
    dirs.push(dir);
    const file = join(dir, 'sandbox.db');
    const old = new Database(file);
    for (const migration of LEGACY_MIGRATIONS.slice(0, 6)) old.exec(migration);
    old.pragma('user_version = 6');
    const { accountId } = seedOldShipments(old, 50);
    const body = '{"id":"evt_old","event":"shipment.created","created_at":"2026-11-22T08:00:00Z","data":{}}';
    old
      .prepare(
        "INSERT INTO events (id, account_id, type, created_at, body) VALUES ('evt_old', ?, 'shipment.created', ?, ?)",
      )
      .run(accountId, T0, body);
    old.close();

    const db = openMigratedDatabase(file);
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(LEGACY_MIGRATIONS.length + 1);
      expect(db.prepare('SELECT count(*) FROM shipments').pluck().get()).toBe(50);
      const sql = new SqliteSql(db);
      expect(await new EventStore(sql).body(sql, 'evt_old')).toBe(body);
      const definition = (name: string) =>
        db.prepare("SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = ?").pluck().get(name);
      // Ascending (schema 7), on the account's key since schema 16.
      expect(definition('shipments_page')).toBe(
        'CREATE INDEX shipments_page ON shipments (account_key, created_at)',
      );
      expect(definition('events_by_account')).toBe('CREATE INDEX events_by_account ON events (account_key)');
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      db.close();
    }
  });
});

describe('schema 16 (account keys, packed shipment bodies)', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** Shipments (their JSON as it is) and their events, in three accounts, written as schema 15 wrote them. */
  function schema15(file: string) {
    const db = new Database(file);
    db.pragma('foreign_keys = ON');
    for (const migration of LEGACY_MIGRATIONS.slice(0, 15)) db.exec(migration);
    db.pragma('user_version = 15');
    const accounts = ['acct_a', 'acct_b', 'acct_c'];
    for (const id of accounts) {
      db.prepare(
        `INSERT INTO accounts (id, name, plan, created_at, clock_anchor_real, clock_anchor_virtual, clock_speed)
         VALUES (?, ?, 'growth', ?, ?, ?, 1)`,
      ).run(id, id, T0, T0, T0);
    }
    const shipment = db.prepare(
      `INSERT INTO shipments (id, account_id, status, carrier, reference, tracking_number, created_at, body)
       VALUES (@id, @account, @status, @carrier, @reference, @tracking, @createdAt, @body)`,
    );
    const event = db.prepare(
      `INSERT INTO events (id, account_id, type, created_at, body, packed)
       VALUES (@id, @account, 'shipment.created', @createdAt, '', @packed)`,
    );
    const bodies = new Map<string, string>();
    for (let i = 0; i < 60; i++) {
      // Accounts a and b take turns; c has none.
      const account = accounts[i % 2] as string;
      const id = `shp_${String(i).padStart(4, '0')}`;
      const status = i % 3 ? 'created' : 'label_generated';
      const body = JSON.stringify({ id, status, carrier: i % 4 ? 'ups' : 'usps', reference: `order-${i}` });
      bodies.set(id, body);
      shipment.run({
        id,
        account,
        status,
        carrier: i % 4 ? 'ups' : 'usps',
        reference: `order-${i}`,
        tracking: status === 'label_generated' ? `1Z${i}` : null,
        createdAt: T0 + i,
        body,
      });
      const envelope = `{"id":"evt_${i}","event":"shipment.created","created_at":"2026-11-22T08:00:00Z","data":${body}}`;
      event.run({ id: `evt_${i}`, account, createdAt: T0 + i, packed: packBody(envelope) });
    }
    const counts = db.prepare('SELECT * FROM shipment_counts ORDER BY 1, 2, 3').all();
    db.close();
    return { bodies, counts };
  }

  it('upgrades a database of schema 15: every row kept, each account listing, searching and counting its own', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandbox-storage-'));
    dirs.push(dir);
    const file = join(dir, 'sandbox.db');
    const { bodies, counts } = schema15(file);

    const db = openMigratedDatabase(file);
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(LEGACY_MIGRATIONS.length + 1);
      const keys = db.prepare('SELECT account_id, key FROM account_keys ORDER BY key').all();
      expect(keys).toEqual([
        { account_id: 'acct_a', key: 1 },
        { account_id: 'acct_b', key: 2 },
        { account_id: 'acct_c', key: 3 },
      ]);
      expect(
        db
          .prepare(
            `SELECT count(*) FROM shipments s JOIN account_keys k ON k.account_id = s.account_id
             WHERE s.account_key IS NOT k.key`,
          )
          .pluck()
          .get(),
      ).toBe(0);
      expect(db.prepare('SELECT count(*) FROM events WHERE account_key IS NULL').pluck().get()).toBe(0);

      const sql = new SqliteSql(db);
      const store = new ShipmentStore(sql);
      const events = new EventStore(sql);
      for (const [account, parity] of [
        ['acct_a', 0],
        ['acct_b', 1],
      ] as const) {
        const own = [...bodies.keys()].filter((_, i) => i % 2 === parity).reverse();
        const page = await store.page(account, {}, 100, undefined);
        // The bodies written before schema 16 read as they were, newest first, the account's only.
        expect(page.bodies).toEqual(own.map((id) => bodies.get(id)));
        expect((await store.page(account, { status: 'label_generated' }, 100, undefined)).bodies).toEqual(
          own
            .filter((id) => JSON.parse(bodies.get(id) as string).status === 'label_generated')
            .map((id) => bodies.get(id)),
        );
        expect(await store.count(account, {})).toBe(30);
        const listed = JSON.parse(await events.listText(account, { limit: 100 })).data as { id: string }[];
        expect(listed).toHaveLength(30);
        expect(listed.every(({ id }) => Number(id.slice(4)) % 2 === parity)).toBe(true);
      }
      expect(
        (await store.search('acct_a', 'order-1', undefined, 100)).map((body) => JSON.parse(body).id),
      ).toEqual(
        // order-1, order-10..19 of account a: the even ones.
        ['shp_0018', 'shp_0016', 'shp_0014', 'shp_0012', 'shp_0010'],
      );
      expect((await store.search('acct_b', '1Z3', undefined, 10)).map((body) => JSON.parse(body).id)).toEqual(
        ['shp_0003'],
      );
      expect(await store.search('acct_a', '1Z3', undefined, 10)).toEqual([]);
      expect((await store.page('acct_c', {}, 100, undefined)).bodies).toEqual([]);
      expect(db.prepare('SELECT * FROM shipment_counts ORDER BY 1, 2, 3').all()).toEqual(counts);
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(db.pragma('foreign_key_check')).toEqual([]);

      // A reset deletes the account's rows, and no other's.
      await store.deleteAccount(sql, 'acct_a');
      await events.deleteAccount(sql, 'acct_a');
      expect((await store.page('acct_a', {}, 100, undefined)).bodies).toEqual([]);
      expect((await store.page('acct_b', {}, 100, undefined)).bodies).toHaveLength(30);
      expect(JSON.parse(await events.listText('acct_b', { limit: 100 })).data).toHaveLength(30);
    } finally {
      db.close();
    }
  });

  it("gives each new account a key of its own, and a row written without one its account's", async () => {
    const db = openMigratedDatabase(':memory:');
    const insertAccount = db.prepare(
      `INSERT INTO accounts (id, name, plan, created_at, clock_anchor_real, clock_anchor_virtual, clock_speed)
       VALUES (?, 'n', 'growth', ?, ?, ?, 1)`,
    );
    insertAccount.run('acct_first', T0, T0, T0);
    insertAccount.run('acct_second', T0, T0, T0);
    const keyOf = (id: string) =>
      db.prepare('SELECT key FROM account_keys WHERE account_id = ?').pluck().get(id);
    expect(keyOf('acct_second')).toBeGreaterThan(keyOf('acct_first') as number);
    // A rolled-back account leaves no key behind, and the next account still gets one of its own.
    expect(() =>
      db.transaction(() => {
        insertAccount.run('acct_gone', T0, T0, T0);
        throw new Error('changed my mind');
      })(),
    ).toThrow('changed my mind');
    expect(keyOf('acct_gone')).toBeUndefined();
    insertAccount.run('acct_third', T0, T0, T0);
    expect(new Set([keyOf('acct_first'), keyOf('acct_second'), keyOf('acct_third')]).size).toBe(3);

    // SQL that names only the account's id (as schema 15 wrote rows) still files the row under its key.
    db.prepare(
      `INSERT INTO shipments (id, account_id, status, carrier, created_at, body)
       VALUES ('shp_raw', 'acct_second', 'created', 'ups', ?, '{"id":"shp_raw"}')`,
    ).run(T0);
    db.prepare(
      "INSERT INTO events (id, account_id, type, created_at, body) VALUES ('evt_raw', 'acct_second', 'shipment.created', ?, '{}')",
    ).run(T0);
    const sql = new SqliteSql(db);
    expect((await new ShipmentStore(sql).page('acct_second', {}, 10, undefined)).bodies).toEqual([
      '{"id":"shp_raw"}',
    ]);
    expect(await new EventStore(sql).listText('acct_second', { limit: 10 })).toBe('{"data":[{}]}');
    expect((await new ShipmentStore(sql).page('acct_first', {}, 10, undefined)).bodies).toEqual([]);
    db.close();
  });

  it('stores new shipment bodies packed, and reads them back as written', async () => {
    const db = openMigratedDatabase(':memory:');
    db.prepare(
      `INSERT INTO accounts (id, name, plan, created_at, clock_anchor_real, clock_anchor_virtual, clock_speed)
       VALUES ('acct_p', 'p', 'growth', ?, ?, ?, 1)`,
    ).run(T0, T0, T0);
    const sql = new SqliteSql(db);
    const store = new ShipmentStore(sql);
    const { json } = await store.insert(sql, {
      id: 'shp_packed',
      accountId: 'acct_p',
      status: 'created',
      carrier: 'usps',
      service: 'ground_advantage',
      rate: { amount: '12.88', currency: 'USD' },
      from: US_ORIGIN,
      to: US_DESTINATION,
      parcel: PARCEL,
      reference: 'order-1',
      createdAt: T0,
    });
    const stored = db.prepare("SELECT body FROM shipments WHERE id = 'shp_packed'").pluck().get() as string;
    expect(stored.charCodeAt(0)).toBe(1);
    expect(stored.length).toBeLessThan(json.length * 0.4);
    expect(await store.findJson('acct_p', 'shp_packed')).toBe(json);
    expect((await store.page('acct_p', {}, 10, undefined)).bodies).toEqual([json]);
    expect(await store.search('acct_p', 'order-1', undefined, 10)).toEqual([json]);
    db.close();
  });
});

describe('foreign keys', () => {
  it('each have an index on their column, so deleting a parent never scans a whole table per row', () => {
    const db = openMigratedDatabase(':memory:');
    const tables = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .pluck()
      .all() as string[];
    const unindexed: string[] = [];
    for (const table of tables) {
      const leading = new Set(
        (db.pragma(`index_list(${table})`) as { name: string }[]).map(
          (index) => (db.pragma(`index_info(${index.name})`) as { name: string }[])[0]?.name,
        ),
      );
      for (const key of db.pragma(`foreign_key_list(${table})`) as { from: string; table: string }[]) {
        // Accounts are never deleted one row at a time: a reset deletes each table's rows of the
        // account in one statement, one pass over the table.
        if (key.table !== 'accounts' && !leading.has(key.from)) unindexed.push(`${table}.${key.from}`);
      }
    }
    expect(tables.length).toBeGreaterThan(10);
    expect(unindexed).toEqual([]);
  });
});
