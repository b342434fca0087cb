import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PostgresServer, startPostgresServer } from '../scripts/embedded-postgres.js';
import { parseCommandLine, testConfig } from '../src/config/index.js';
import { describeUrl } from '../src/db/postgres-url.js';
import { selfSignedCertificate } from '../src/http/certificate.js';
import { startSandbox } from '../src/index.js';
import { startServer } from '../src/server.js';
import { newPostgresSchema } from './databases.js';
import { shipmentRequest } from './helpers.js';
import { closedPortUrl } from './receiver.js';

/**
 * The sandbox over PostgreSQL as a user meets it: `--database` (and `DATABASE_URL`), `startSandbox({
 * database })`, the ready line and `/healthz` naming the engine, TLS to the database through the URL,
 * replicas started together over an empty database, and a database a newer sandbox wrote.
 */
let postgres: PostgresServer;
const scratch = mkdtempSync(join(tmpdir(), 'sandbox-pg-engine-'));
const caFile = join(scratch, 'ca.pem');

beforeAll(async () => {
  const now = Date.now();
  const tls = selfSignedCertificate({
    commonName: 'localhost',
    organization: 'Shipping Sandbox tests',
    names: ['localhost', '127.0.0.1'],
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 86_400_000),
  });
  writeFileSync(caFile, tls.cert);
  postgres = await startPostgresServer({ tls });
}, 60_000);

afterAll(async () => {
  await postgres?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('--database', () => {
  it('takes a postgres:// URL from the flag or DATABASE_URL, and refuses anything else', () => {
    const url = 'postgres://u:p@db.example:5432/sandbox';
    expect(parseCommandLine(['--database', url], {})).toMatchObject({ config: { database: url } });
    expect(parseCommandLine([], { DATABASE_URL: url })).toMatchObject({ config: { database: url } });
    expect(() => parseCommandLine(['--database', 'mysql://x/y'], {})).toThrow(/postgres:\/\//);
  });

  it('takes a server on this machine through its Unix socket, and refuses a URL naming no server', () => {
    const url = 'postgresql:///sandbox?host=/var/run/postgresql';
    expect(parseCommandLine(['--database', url], {})).toMatchObject({ config: { database: url } });
    expect(() => parseCommandLine(['--database', 'postgres:///sandbox'], {})).toThrow(/socket/);
    expect(describeUrl(`${url}&port=5433&password=secret`)).toBe(
      'sandbox through the socket in /var/run/postgresql (port 5433)',
    );
  });

  it('is a start-up error beside --memory or --data-dir, naming the flags that clash', () => {
    const url = 'postgres://u:p@db.example:5432/sandbox';
    expect(() => parseCommandLine(['--database', url, '--memory'], {})).toThrow(/--database.*--memory/);
    expect(() => parseCommandLine(['--database', url, '--data-dir', '/tmp/x'], {})).toThrow(/--data-dir/);
    expect(() => parseCommandLine([], { DATABASE_URL: url, SANDBOX_MEMORY: 'true' })).toThrow(/--memory/);
    // The image sets SANDBOX_DATA_DIR: beside --database it keeps only the HTTPS certificate.
    expect(parseCommandLine([], { DATABASE_URL: url, SANDBOX_DATA_DIR: '/data' })).toMatchObject({
      config: { database: url, dataDir: '/data' },
    });
    const built = spawnSync(
      process.execPath,
      ['dist/main.js', '--database', url, '--memory', '--port', '0'],
      {
        encoding: 'utf8',
        timeout: 20_000,
      },
    );
    expect(built.status).toBe(1);
    expect(built.stderr).toMatch(/--database.*--memory/);
  });
});

describe('a sandbox over PostgreSQL', () => {
  it('serves from startSandbox({ database }), and /healthz names the engine', async () => {
    const sandbox = await startSandbox({ database: await newPostgresSchema(postgres.url) });
    try {
      const health = await fetch(`${sandbox.origin}/healthz`);
      expect(await health.json()).toEqual({ status: 'ok', database: 'postgres' });
      const created = await fetch(`${sandbox.url}/shipments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${sandbox.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(shipmentRequest()),
      });
      expect(created.status).toBe(201);
    } finally {
      await sandbox.stop();
    }
  });

  it('connects through the Unix socket a postgresql:///name?host=/folder URL names', async () => {
    const tcp = new URL(await newPostgresSchema(postgres.url));
    const url = new URL(`postgresql://${tcp.pathname}`);
    for (const [name, value] of tcp.searchParams) url.searchParams.set(name, value);
    url.searchParams.set('host', postgres.socketFolder);
    url.searchParams.set('port', String(postgres.port));
    url.searchParams.set('user', decodeURIComponent(tcp.username));
    url.searchParams.set('password', decodeURIComponent(tcp.password));
    const sandbox = await startSandbox({ database: url.toString() });
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    try {
      const created = await fetch(`${sandbox.url}/shipments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${sandbox.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(shipmentRequest()),
      });
      expect(created.status).toBe(201);
      // A connection through a socket has no client address.
      const { rows } = await admin.query(
        "SELECT client_addr FROM pg_stat_activity WHERE application_name = 'shipping-sandbox'",
      );
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((row) => row.client_addr === null)).toBe(true);
    } finally {
      await admin.end();
      await sandbox.stop();
    }
  });

  it('refuses dataDir and database together', async () => {
    await expect(startSandbox({ database: postgres.url, dataDir: scratch })).rejects.toThrow(/not both/);
  });

  it('says in its ready line which engine keeps the data, never the password', async () => {
    const url = await newPostgresSchema(postgres.url);
    const withPassword = new URL(url);
    withPassword.password = 'not-shown';
    const child = spawn(
      process.execPath,
      ['dist/main.js', '--port', '0', '--https-port', '0', '--database', withPassword.toString()],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk) => {
        stdout += String(chunk);
        const ready = stdout.split('\n').find((text) => text.includes('"ready":true'));
        if (ready) resolve(ready);
      });
      child.once('exit', (code) => reject(new Error(`exited with ${code}`)));
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    const ready = JSON.parse(line);
    expect(ready).toMatchObject({ ready: true, database: 'postgres' });
    expect(ready.data).toBe(`PostgreSQL, 127.0.0.1:${postgres.port}/postgres`);
    expect(stdout).not.toContain('not-shown');
  });

  it('connects over TLS as the URL says (sslmode and sslrootcert)', async () => {
    const url = new URL(await newPostgresSchema(postgres.url));
    url.hostname = 'localhost';
    url.searchParams.set('sslmode', 'verify-full');
    url.searchParams.set('sslrootcert', caFile);
    const sandbox = await startSandbox({ database: url.toString() });
    try {
      expect((await fetch(`${sandbox.origin}/healthz`)).status).toBe(200);
      const admin = new pg.Client({ connectionString: postgres.url });
      await admin.connect();
      try {
        const { rows } = await admin.query<{ ssl: boolean }>(
          `SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
           WHERE a.application_name = 'shipping-sandbox'`,
        );
        expect(rows.length).toBeGreaterThan(0);
        expect(rows.every((row) => row.ssl)).toBe(true);
      } finally {
        await admin.end();
      }
    } finally {
      await sandbox.stop();
    }
  });

  it('comes up on every replica started at once over an empty database', async () => {
    const url = await newPostgresSchema(postgres.url);
    const servers = await Promise.all(
      [1, 2, 3].map(() => startServer(testConfig({ database: url }), undefined, { https: false })),
    );
    try {
      for (const server of servers) expect((await fetch(`${server.origin}/healthz`)).status).toBe(200);
    } finally {
      await Promise.all(servers.map((server) => server.close()));
    }
  });

  it('says what to fix when the URL names a schema that does not exist, or a server that is not there', async () => {
    const missing = new URL(postgres.url);
    missing.searchParams.set('options', '-c search_path=nowhere_made');
    await expect(
      startServer(testConfig({ database: missing.toString() }), undefined, { https: false }),
    ).rejects.toThrow(
      /^no schema of the database's search_path \(nowhere_made\) exists: create it \(CREATE SCHEMA …\)/,
    );
    const closed = new URL(postgres.url);
    closed.port = new URL(await closedPortUrl()).port;
    closed.password = 'not-shown';
    const refused = startServer(testConfig({ database: closed.toString() }), undefined, { https: false });
    await expect(refused).rejects.toThrow(
      new RegExp(`^cannot use the database at 127\\.0\\.0\\.1:${closed.port}/postgres: connect ECONNREFUSED`),
    );
    await expect(refused).rejects.not.toThrow(/not-shown/);
  });

  it('refuses to start over a database a newer sandbox wrote, and says which tables', async () => {
    const url = await newPostgresSchema(postgres.url);
    const server = await startServer(testConfig({ database: url }), undefined, { https: false });
    await server.close();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query("UPDATE schema_versions SET version = version + 1 WHERE name = 'shipments'");
    await admin.end();
    await expect(startServer(testConfig({ database: url }), undefined, { https: false })).rejects.toThrow(
      /newer sandbox: its shipments tables are at version 2/,
    );
  });
});
