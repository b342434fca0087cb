#!/usr/bin/env node
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { DEFAULT_ACCOUNT, seedDefaultAccount } from './accounts/accounts.js';
import { createApp } from './app.js';
import { type Config, ConfigError, helpText, parseCommandLine } from './config.js';
import { databaseLocation, openDatabase } from './db/database.js';
import { createLogger } from './logger.js';
import { createState } from './state.js';

/** The command line: flags and environment -> config -> open the database -> serve -> banner. */
function main(): void {
  let config: Config;
  try {
    const commandLine = parseCommandLine(process.argv.slice(2), process.env);
    if (commandLine.help) {
      process.stdout.write(helpText());
      return;
    }
    config = commandLine.config;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`shipping-sandbox: ${error.message}\n`);
    process.exitCode = 2;
    return;
  }

  const logger = createLogger(config.logLevel);
  const location = databaseLocation(config);
  const db = openDatabase(location);
  const state = createState(db, config);
  seedDefaultAccount(state.accounts, Date.now(), config.clockSpeed);
  const app = createApp({ state, logger });

  const server = serve(
    { fetch: app.fetch, hostname: config.host, port: config.port },
    (info: AddressInfo) => {
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      const origin = `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${info.port}`;
      process.stdout.write(
        [
          'Shipping Sandbox is ready.',
          `  API       ${origin}/v1`,
          `  CDN       ${config.cdnUrl ?? `${origin}/cdn`}`,
          `  Docs      ${origin}/docs   (OpenAPI: ${origin}/openapi.json)`,
          `  Data      ${location === ':memory:' ? 'in memory (lost at exit)' : location}`,
          `  Test key  ${DEFAULT_ACCOUNT.api_key.value}`,
          '',
          `  curl -H "Authorization: Bearer ${DEFAULT_ACCOUNT.api_key.value}" ${origin}/v1/shipments`,
          '',
        ].join('\n'),
      );
    },
  );

  server.on('error', (error: NodeJS.ErrnoException) => {
    const reason =
      error.code === 'EADDRINUSE'
        ? `port ${config.port} on ${config.host} is already in use (pick another with --port, or 0 for any free port)`
        : error.message;
    process.stderr.write(`shipping-sandbox: cannot listen: ${reason}\n`);
    db.close();
    process.exit(1);
  });

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    server.close(() => {
      db.close();
      process.exit(0);
    });
    // Keep-alive connections would hold close() open; a sandbox has nothing worth waiting for.
    if ('closeAllConnections' in server) server.closeAllConnections();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main();
