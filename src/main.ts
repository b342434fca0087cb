#!/usr/bin/env node
import nodeModule from 'node:module';
import type { Logger } from 'pino';
import { DEFAULT_ACCOUNT } from './accounts/default-account.js';
import { endQuietlyWhenOutputCloses } from './cli/closed-pipe.js';
import { runCommandLine } from './cli/program.js';
import {
  bannerText,
  portFileOf,
  type ReadyInfo,
  readyLine,
  removePortFile,
  writePortFile,
} from './cli/ready.js';
import {
  ClashingSettings,
  type CommandLine,
  ConfigError,
  helpText,
  offersDefaultAccount,
  parseCommandLine,
  SETTINGS,
} from './config/index.js';
import { SANDBOX_VERSION } from './core/version.js';
import type { RunningSandbox } from './server.js';

// The bundle itself comes compiled from the launcher's code cache (src/launcher.ts). Node 22.1+ keeps
// the code it compiles on disk too: this covers the packages loaded from node_modules (the logger,
// SQLite's bindings, the label renderers). Node 20 has no such cache and compiles them.
(nodeModule as { enableCompileCache?: () => unknown }).enableCompileCache?.();

const version = SANDBOX_VERSION;

/** The command line: serve (the default), or control a running sandbox (src/cli/). */
async function main(): Promise<void> {
  endQuietlyWhenOutputCloses();
  const status = await runCommandLine(process.argv.slice(2), {
    version,
    servingFlags: Object.values(SETTINGS),
    serve,
    // Loaded only for this command: it starts a sandbox of its own in this process.
    conformance: async (options) => (await import('./index.js')).conformance(options),
  });
  if (status !== 0) process.exitCode = status;
}

/** Flags and environment -> config -> open the database -> serve -> the banner or the ready line. */
async function serve(args: string[]): Promise<void> {
  let commandLine: CommandLine;
  try {
    commandLine = parseCommandLine(args, process.env);
  } catch (error) {
    if (!(error instanceof ConfigError) && !(error instanceof ClashingSettings)) throw error;
    process.stderr.write(`shipping-sandbox: ${error.message}\n`);
    process.exitCode = error instanceof ClashingSettings ? 1 : 2;
    return;
  }
  if (commandLine.help) {
    process.stdout.write(helpText());
    return;
  }
  const { config } = commandLine;
  // Loaded only to serve: the control commands start without the server's code.
  const [{ createLogger }, { ScenarioFileError }, server] = await Promise.all([
    import('./logger.js'),
    import('./scenarios/files.js'),
    import('./server.js'),
  ]);
  const logger = createLogger(config.logLevel, config.logFormat, config.replicaId);

  let sandbox: RunningSandbox;
  try {
    sandbox = await server.startServer(config, logger);
  } catch (error) {
    if (error instanceof ScenarioFileError) {
      process.stderr.write(`shipping-sandbox: a scenario file is invalid:\n${error.message}\n`);
      process.exitCode = 2;
      return;
    }
    // Flags that passed parsing but name unusable files (--tls-cert without --tls-key, say).
    if (error instanceof ConfigError) {
      process.stderr.write(`shipping-sandbox: ${error.message}\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`shipping-sandbox: cannot start: ${(error as Error).message}\n`);
    process.exitCode = 1;
    return;
  }

  const { portFile } = config;
  if (portFile !== undefined) {
    try {
      writePortFile(portFile, portFileOf(sandbox.origin, sandbox.httpsOrigin));
    } catch (error) {
      // A script waiting for the file would wait for ever: stop instead, and say why.
      process.stderr.write(`shipping-sandbox: cannot write --port-file: ${(error as Error).message}\n`);
      await sandbox.close();
      process.exitCode = 1;
      return;
    }
  }

  const info: ReadyInfo = {
    origin: sandbox.origin,
    httpsOrigin: sandbox.httpsOrigin,
    certificatePath: sandbox.certificatePath,
    cdnUrl: sandbox.cdnUrl,
    location: sandbox.location,
    engine: sandbox.sandbox.database.engine,
    apiKey: offersDefaultAccount(config) ? DEFAULT_ACCOUNT.api_key.value : undefined,
    adminToken: config.adminToken !== undefined,
    strictHttps: config.strictHttps,
    version,
    replica: config.replicaId,
  };
  // A person gets the banner; a script (stdout is a pipe or a file) one JSON line to wait for.
  process.stdout.write(process.stdout.isTTY ? bannerText(info) : readyLine(info));

  onSignals(sandbox, logger, config.shutdownTimeoutMs, portFile);
  // Tells the launcher (src/launcher.ts) that the code compiled by starting can be kept for the next
  // start; its own event, as Node's typings know only Node's.
  (process as NodeJS.EventEmitter).emit('shipping-sandbox:ready');
}

function onSignals(sandbox: RunningSandbox, logger: Logger, graceMs: number, portFile?: string): void {
  const stop = (signal: NodeJS.Signals) => {
    logger.info({ signal, graceMs }, 'shutting down');
    void sandbox.shutdown(graceMs).then(() => {
      if (portFile !== undefined) removePortFile(portFile);
      process.exit(0);
    });
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

void main();
