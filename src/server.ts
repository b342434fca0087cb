import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from './config/index.js';
import { type DataDirectoryLock, DataDirectoryUnusable, lockDataDirectory } from './db/data-dir-lock.js';
import { databaseLocation, openDatabase } from './db/database.js';
import { postgresDatabase } from './db/postgres.js';
import type { SandboxDatabase } from './db/sql.js';
import { sqliteDatabase } from './db/sqlite.js';
import { ConnectionsPerClient } from './http/connections.js';
import { httpsOriginHost, loadTlsMaterial } from './http/https.js';
import { createListener, TRANSPORT_TIMEOUTS, type TransportLimits } from './http/listener.js';
import { createLogger } from './logger.js';
import { loadScenarios, scenarioDirectories } from './scenarios/files.js';
import { createSandbox, type Sandbox } from './wiring.js';

/** A server listening over HTTP. */
export interface RunningServer {
  /** `http://host:port`, with the port really bound. */
  origin: string;
  cdnUrl: string;
  /** `:memory:`, the database file's path, or the PostgreSQL database (never its password). */
  location: string;
  sandbox: Sandbox;
  /**
   * Stops at once: connections are cut, webhook sends on the wire are cut off (and sent again after
   * the next start), and the database is closed.
   */
  close(): Promise<void>;
  /**
   * Stops gracefully (SIGTERM, SIGINT): no new connections, requests in flight and webhook sends on the
   * wire may finish for `graceMs`, then whatever is left is cut off as `close()` does.
   */
  shutdown(graceMs: number): Promise<void>;
}

/** A server listening over HTTP and HTTPS, as the command line runs it. */
export interface RunningSandbox extends RunningServer {
  /** `https://localhost:port` (a name the certificate covers), with the port really bound. */
  httpsOrigin: string;
  /** The PEM certificate the HTTPS listener serves: what clients trust (`curl --cacert`, `NODE_EXTRA_CA_CERTS`). */
  certificatePath: string;
}

/** How long requests in flight may still take once the webhook sends have been cut off at shutdown. */
const REQUESTS_GRACE_AFTER_SENDS_MS = 1000;

export interface StartOptions {
  /**
   * The listeners' timeouts, for tests that need short ones (see TRANSPORT_TIMEOUTS for the defaults
   * and why); the connection cap is `config.maxConnections`.
   */
  transport?: Partial<Omit<TransportLimits, 'maxConnections'>>;
  /**
   * Whether to listen over HTTPS beside HTTP (the default, as the command line does). Without it no
   * certificate is read or made: an embedded sandbox (the package's `startSandbox()`) that was not
   * asked for HTTPS neither pays for it nor writes one.
   */
  https?: boolean;
  /**
   * What a start-up error tells the caller to change: the command line's flags by default, the
   * options of `startSandbox()` when it starts the server.
   */
  advice?: StartAdvice;
}

/** How the caller changes each setting a start-up error may be about. */
export interface StartAdvice {
  port: string;
  httpsPort: string;
  dataDir: string;
}

const FLAGS_ADVICE: StartAdvice = {
  port: 'choose another with --port',
  httpsPort: 'choose another with --https-port',
  dataDir: 'choose another with --data-dir (or run with --memory)',
};

/**
 * Opens the database, seeds it, and listens over HTTP and, unless `options.https` is false, HTTPS.
 * Resolves once every port is bound.
 */
export function startServer(
  config: Config,
  logger: Logger | undefined,
  options: StartOptions & { https: false },
): Promise<RunningServer>;
export function startServer(
  config: Config,
  logger?: Logger,
  options?: StartOptions & { https?: true },
): Promise<RunningSandbox>;
export async function startServer(
  config: Config,
  logger: Logger = createLogger(config.logLevel, undefined, config.replicaId),
  options: StartOptions = {},
): Promise<RunningServer | RunningSandbox> {
  // One server per data directory, taken before anything in it is read or written (the certificate,
  // the database) and kept until close; a second server stops here. `--memory` shares nothing.
  const advice = options.advice ?? FLAGS_ADVICE;
  const lock = config.memory || config.database ? undefined : lockDirectory(config.dataDir, advice);
  try {
    return await startOwning(config, logger, lock, options);
  } catch (error) {
    lock?.release();
    throw error;
  }
}

async function startOwning(
  config: Config,
  logger: Logger,
  lock: DataDirectoryLock | undefined,
  options: StartOptions,
): Promise<RunningServer | RunningSandbox> {
  const advice = options.advice ?? FLAGS_ADVICE;
  // Scenario files and TLS files first: a bad one stops start-up before anything is opened.
  const scenarios = loadScenarios(scenarioDirectories(config.scenariosDir));
  const tls = options.https === false ? undefined : await loadTlsMaterial(config, logger);
  // Clients that trusted an earlier certificate have to trust the new one: worth a line.
  if (tls?.source === 'generated' && !config.memory && !config.database)
    logger.info(
      { certificatePath: tls.certificatePath, names: tls.certificate.subjectAltName },
      'made a new HTTPS certificate',
    );
  const database = openSandboxDatabase(config, logger);
  const location = config.database ? database.description : databaseLocation(config);
  let sandbox: Sandbox;
  try {
    sandbox = await createSandbox({ database, config, logger, scenarios });
    await sandbox.start();
  } catch (error) {
    await database.close().catch(() => undefined);
    throw error;
  }
  const { app } = sandbox;

  const limits: TransportLimits = {
    ...TRANSPORT_TIMEOUTS,
    ...options.transport,
    maxConnections: config.maxConnections,
  };
  // One count for both ports: a client's connections to either count against its cap.
  const clients = new ConnectionsPerClient(config.maxConnectionsPerClient);
  const servers: Server[] = [];
  const listen = (
    tlsPair: { cert: string; key: string } | undefined,
    what: string,
    advice: string,
    port: number,
  ) =>
    new Promise<AddressInfo>((resolve, reject) => {
      const server = createListener({
        fetch: app.fetch,
        hostname: config.host,
        tls: tlsPair,
        limits,
        clients,
        logger,
      });
      servers.push(server);
      server.once('error', (error) => reject(listenError(error, what, advice, config.host, port)));
      server.listen(port, config.host, () => resolve(server.address() as AddressInfo));
    });

  /**
   * Stops accepting, lets the requests in flight finish until `deadline` (idle keep-alive connections
   * are closed as they become idle), then cuts whatever connection is left.
   */
  const stopServers = (deadline: number) =>
    Promise.all(
      servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            if (!server.listening) return resolve();
            const idle = setInterval(() => server.closeIdleConnections(), 50);
            const late = setTimeout(
              () => server.closeAllConnections(),
              Math.max(0, deadline - performance.now()),
            );
            server.close(() => {
              clearInterval(idle);
              clearTimeout(late);
              resolve();
            });
            server.closeIdleConnections();
            if (deadline <= performance.now()) server.closeAllConnections();
          }),
      ),
    );
  const release = async () => {
    await database
      .close()
      .catch((error: unknown) => logger.warn({ err: error }, 'closing the database failed'));
    lock?.release();
    tls?.dispose();
  };

  let info: AddressInfo;
  let httpsInfo: AddressInfo | undefined;
  try {
    info = await listen(undefined, 'HTTP', advice.port, config.port);
    if (tls)
      httpsInfo = await listen({ cert: tls.cert, key: tls.key }, 'HTTPS', advice.httpsPort, config.httpsPort);
  } catch (error) {
    await stopServers(performance.now());
    await sandbox.stop();
    await release();
    throw error;
  }

  const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
  const origin = `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${info.port}`;
  let closing: Promise<void> | undefined;
  const shutdown = (graceMs: number) => {
    // Sends on the wire are cut off at the deadline; requests in flight get a second more, so one
    // that waited on them (a clock advance) still answers. The database closes once both are done.
    const deadline = performance.now() + graceMs;
    const requestsDeadline = graceMs === 0 ? deadline : deadline + REQUESTS_GRACE_AFTER_SENDS_MS;
    closing ??= Promise.all([stopServers(requestsDeadline), sandbox.stop(deadline)]).then(release);
    return closing;
  };
  const running: RunningServer = {
    origin,
    cdnUrl: config.cdnUrl ?? `${origin}/cdn`,
    location,
    sandbox,
    close: () => shutdown(0),
    shutdown,
  };
  if (!tls || !httpsInfo) return running;
  const httpsOrigin = `https://${httpsOriginHost(httpsInfo.address, tls.certificate)}:${httpsInfo.port}`;
  return { ...running, httpsOrigin, certificatePath: tls.certificatePath };
}

/** The database `config` names: PostgreSQL (`--database`), or SQLite in memory or in the data directory. */
function openSandboxDatabase(config: Config, logger: Logger): SandboxDatabase {
  if (config.database)
    return postgresDatabase(config.database, {
      onIdleError: (error) => logger.warn({ err: error }, 'a database connection broke while idle'),
    });
  const location = databaseLocation(config);
  return sqliteDatabase(openDatabase(location), location);
}

/** A listen failure in words that say what to change (`advice`: choose another port, as the caller can). */
function listenError(error: Error, what: string, advice: string, host: string, port: number): Error {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE')
    return new Error(`${what} port ${port} on ${host} is already in use (${advice}, or 0 for any free port)`);
  if (code === 'EACCES')
    return new Error(`${what} port ${port} on ${host} needs privileges this process lacks (${advice})`);
  return error;
}

/** The data directory's lock, an unusable directory said with what to do about it. */
function lockDirectory(dataDir: string, advice: StartAdvice): DataDirectoryLock {
  try {
    return lockDataDirectory(dataDir);
  } catch (error) {
    if (error instanceof DataDirectoryUnusable)
      throw new DataDirectoryUnusable(`${error.message}; ${advice.dataDir}`);
    throw error;
  }
}
