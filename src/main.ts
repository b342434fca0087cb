#!/usr/bin/env node
import { DEFAULT_ACCOUNT } from './accounts/accounts.js';
import { type CommandLine, ConfigError, helpText, parseCommandLine } from './config.js';
import { createLogger } from './logger.js';
import { ScenarioFileError } from './scenarios/scenario-file.js';
import { startSandbox } from './server.js';

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
  const logger = createLogger(config.logLevel);

  let sandbox: Awaited<ReturnType<typeof startSandbox>>;
  try {
    sandbox = await startSandbox(config, logger);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (error instanceof ScenarioFileError) {
      process.stderr.write(`shipping-sandbox: a scenario file is invalid:\n${error.message}\n`);
      process.exitCode = 2;
      return;
    }
    const reason =
      code === 'EADDRINUSE'
        ? `port ${config.port} on ${config.host} is already in use (choose another with --port, or 0 for any free port)`
        : (error as Error).message;
    process.stderr.write(`shipping-sandbox: cannot start: ${reason}\n`);
    process.exitCode = 1;
    return;
  }

  const { origin, cdnUrl, location } = sandbox;
  const key = DEFAULT_ACCOUNT.api_key.value;
  process.stdout.write(
    [
      'Shipping Sandbox is ready.',
      `  API       ${origin}/v1`,
      `  CDN       ${cdnUrl}`,
      `  Docs      ${origin}/docs   (OpenAPI: ${origin}/openapi.json)`,
      `  Data      ${location === ':memory:' ? 'in memory (lost at exit)' : location}`,
      `  Test key  ${key}`,
      '',
      `  curl -H "Authorization: Bearer ${key}" ${origin}/v1/shipments`,
      '',
    ].join('\n'),
  );

  const stop = (signal: NodeJS.Signals) => {
    logger.info({ signal }, 'shutting down');
    void sandbox.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

await main();
