import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { expect } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import { type Config, testConfig } from '../src/config/index.js';
import { openDatabase } from '../src/db/database.js';
import { migrateSqlite } from '../src/db/migrations.js';
import type { SandboxDatabase } from '../src/db/sql.js';
import { createListener, TRANSPORT_TIMEOUTS } from '../src/http/listener.js';
import type { JournaledRequest } from '../src/journal/journal.js';
import { loadScenarios, scenarioDirectories } from '../src/scenarios/files.js';
import { createSandbox, type SandboxParts, sandboxSchema } from '../src/wiring.js';
import { testDatabase } from './databases.js';

export const DEFAULT_KEY = DEFAULT_ACCOUNT.api_key.value;

/** Loaded once per test file: every sandbox of the file shares them. */
const BUILTIN_SCENARIOS = loadScenarios(scenarioDirectories(undefined));

/** A database as a sandbox leaves it: opened, and its tables made (or brought up to date). */
export function openMigratedDatabase(location: string) {
  const db = openDatabase(location);
  migrateSqlite(db, sandboxSchema(testConfig()));
  return db;
}

/** A logger whose lines tests can read. */
export function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n'))
        if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

/**
 * The whole app over a real database (SQLite in memory, or a schema of its own on the run's
 * PostgreSQL server: test/databases.ts), called in-process through `app.request`. A fixed wall clock
 * (`realNow`) that tests move by hand keeps running account clocks deterministic.
 */
export async function createTestSandbox(
  overrides: Partial<Config> = {},
  parts: Partial<Pick<SandboxParts, 'resolveHost' | 'database' | 'listenerTiming'>> = {},
) {
  const config = testConfig(overrides);
  const database = parts.database ?? (await testDatabase());
  const wall = { now: Date.UTC(2026, 10, 22, 8, 0, 0) };
  const { logger, lines } = capturingLogger();
  const scenarios = config.scenariosDir
    ? loadScenarios(scenarioDirectories(config.scenariosDir))
    : BUILTIN_SCENARIOS;
  const sandbox = await createSandbox({
    ...parts,
    database,
    config,
    logger,
    scenarios,
    realNow: () => wall.now,
  });
  opened.push(database);
  const { app, db } = sandbox;

  async function call(
    method: string,
    path: string,
    options: { key?: string | null; body?: unknown; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? DEFAULT_KEY : options.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await app.request(path, { method, headers, body });
    const bytes = new Uint8Array(await response.arrayBuffer());
    const text = new TextDecoder().decode(bytes);
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, json, text, bytes };
  }

  /** A new isolated account; returns its key. */
  async function newAccount(plan?: string): Promise<string> {
    const response = await call('POST', '/_sandbox/accounts', { key: null, body: plan ? { plan } : {} });
    expect(response.status).toBe(201);
    return response.json.api_key as string;
  }

  /** Creates a shipment (cheapest rate unless the overrides say otherwise) and returns its body. */
  async function newShipment(overrides: Record<string, unknown> = {}, key?: string) {
    const response = await call('POST', '/v1/shipments', { key, body: shipmentRequest(overrides) });
    expect(response.status).toBe(201);
    return response.json as { id: string; carrier: string; rate: { amount: string; currency: string } };
  }

  const { stores, services, scheduler, modules, schema, ports } = sandbox;
  return {
    /** Starts what runs in the background (the scheduler's timer, the modules' own); tests mostly move the clock instead. */
    start: () => sandbox.start(),
    stop: () => sandbox.stop(),
    app,
    database,
    db,
    stores,
    services,
    ports,
    scheduler,
    modules,
    schema,
    config,
    wall,
    logLines: lines,
    call,
    newAccount,
    newShipment,
  };
}

export type TestSandbox = Awaited<ReturnType<typeof createTestSandbox>>;

/** Every test sandbox's database, closed once its file's tests have run (test/each-file.ts). */
const opened: SandboxDatabase[] = [];

/** Closes the databases of the sandboxes the file's tests made (PostgreSQL's connections end). */
export async function closeTestDatabases(): Promise<void> {
  await Promise.all(opened.splice(0).map((database) => database.close().catch(() => undefined)));
}

export const US_ORIGIN = {
  name: 'Ada Lovelace',
  company: 'Analytical Engines',
  address1: '417 Montgomery St',
  address2: 'Floor 5',
  city: 'San Francisco',
  state: 'CA',
  zip: '94104',
  country: 'US',
};

export const US_DESTINATION = {
  name: 'Grace Hopper',
  address1: '350 5th Ave',
  city: 'New York',
  state: 'NY',
  zip: '10118',
  country: 'US',
};

export const PARCEL = { weight: 1200, length: 30, width: 20, height: 10 };

export function shipmentRequest(overrides: Record<string, unknown> = {}) {
  return { from: US_ORIGIN, to: US_DESTINATION, parcel: PARCEL, reference: 'order-1042', ...overrides };
}

/** Asserts the contract's error body and returns it. */
export function expectError(
  response: { status: number; json: any; headers: Headers },
  status: number,
  code: string,
  field?: string,
) {
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect({ status: response.status, code: response.json?.error?.code }).toEqual({ status, code });
  expect(typeof response.json.error.message).toBe('string');
  if (field === undefined) expect(response.json.error).not.toHaveProperty('field');
  else expect(response.json.error.field).toBe(field);
  return response.json.error as { code: string; message: string; field?: string };
}

/** A sandbox's app on a free loopback port, with the listener's own limits as the server sets them. */
export async function serveSandbox(sandbox: Pick<TestSandbox, 'app'>) {
  const listener = createListener({
    fetch: sandbox.app.fetch,
    hostname: '127.0.0.1',
    limits: { ...TRANSPORT_TIMEOUTS, maxConnections: 256 },
    logger: pino({ level: 'silent' }),
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  const close = async () => {
    listener.closeAllConnections();
    await new Promise<void>((resolve) => listener.close(() => resolve()));
  };
  return { origin, close };
}

/**
 * A journaled request as the middleware would note it, for the journal and the report alone: a `GET` of
 * the shipment list answered 200, answered at `at` on both clocks unless the overrides say otherwise.
 */
export function journaledRequest(
  request: Partial<JournaledRequest> & Pick<JournaledRequest, 'id' | 'at'>,
): JournaledRequest {
  return {
    method: 'GET',
    path: '/v1/shipments',
    query: '',
    status: 200,
    code: null,
    field: null,
    durationMs: 1,
    wallAt: request.at,
    answeredWallAt: request.at,
    keyId: 'key_1',
    keyRevoked: false,
    retryAfter: null,
    bodySha256: null,
    ...request,
  };
}
