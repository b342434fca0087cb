#!/usr/bin/env node
import nodeModule from 'node:module';
import { DEFAULT_ACCOUNT } from './accounts/default-account.js';
import { type CommandLine, ConfigError, helpText, parseCommandLine } from './config.js';
import type { RunningSandbox } from './server.js';

// Node 22.1+ keeps the code it compiles on disk and reads it back at the next start: the server's
// code (loaded below, once the flags are read) then starts without being compiled again. Node 20 has
// no such cache and starts compiling as it always did.
(nodeModule as { enableCompileCache?: () => unknown }).enableCompileCache?.();

/** The command line: flags and environment -> config -> open the database -> serve -> banner. */
async function main(): Promise<void> {
  let commandLine: CommandLine;
  try {
    commandLine = parseCommandLine(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`shipping-sandbox: ${error.message}\n`);
    process.exitCode = 2;
    return;
  }
  if (commandLine.help) {
    process.stdout.write(helpText());
    return;
  }
  const { config } = commandLine;
  // Loaded once the flags are read: a chunk of its own in the build (scripts/build.mjs).
  const [{ createLogger }, { ScenarioFileError }, server] = await Promise.all([
    import('./logger.js'),
    import('./scenarios/files.js'),
    import('./server.js'),
  ]);
  const logger = createLogger(config.logLevel, config.logFormat);

  let sandbox: RunningSandbox;
  try {
    sandbox = await server.startSandbox(config, logger);
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

  const { origin, httpsOrigin, certificatePath, cdnUrl, location } = sandbox;
  const key = DEFAULT_ACCOUNT.api_key.value;
  const cert = shellQuote(certificatePath);
  process.stdout.write(
    [
      'Shipping Sandbox is ready.',
      `  API       ${origin}/v1${config.strictHttps ? '   (strict HTTPS: answers 403 https_required)' : ''}`,
      `  HTTPS     ${httpsOrigin}/v1`,
      `  Cert      ${certificatePath}`,
      `  CDN       ${cdnUrl}`,
      `  Docs      ${origin}/docs   (OpenAPI: ${origin}/openapi.json)`,
      `  Data      ${location === ':memory:' ? 'in memory (lost at exit)' : location}`,
      `  Test key  ${key}`,
      '',
      ...(config.strictHttps ? [] : [`  curl -H "Authorization: Bearer ${key}" ${origin}/v1/shipments`]),
      `  curl --cacert ${cert} -H "Authorization: Bearer ${key}" ${httpsOrigin}/v1/shipments`,
      `  Node clients trust the certificate with NODE_EXTRA_CA_CERTS=${cert}`,
      '',
    ].join('\n'),
  );

  const stop = (signal: NodeJS.Signals) => {
    logger.info({ signal, graceMs: config.shutdownTimeoutMs }, 'shutting down');
    void sandbox.shutdown(config.shutdownTimeoutMs).then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** A path as a POSIX shell word, so the printed commands can be pasted as they are. */
function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

void main();
