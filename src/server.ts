import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import type { Logger } from 'pino';
import { seedDefaultAccount } from './accounts/accounts.js';
import { createApp } from './app.js';
import type { Config } from './config.js';
import { databaseLocation, openDatabase } from './db/database.js';
import { createLogger } from './logger.js';
import { loadScenarios } from './scenarios/scenario-file.js';
import { createState, type State, scenarioDirectories } from './state.js';

export interface RunningSandbox {
  /** `http://host:port`, with the port really bound. */
  origin: string;
  cdnUrl: string;
  /** `:memory:` or the database file's path. */
  location: string;
  state: State;
  /** Stops listening, then closes the database. */
  close(): Promise<void>;
}

/** Opens the database, seeds it, and listens. Resolves once the port is bound. */
export async function startSandbox(
  config: Config,
  logger: Logger = createLogger(config.logLevel),
): Promise<RunningSandbox> {
  // Scenario files first: a bad one stops start-up before anything is opened.
  const scenarios = loadScenarios(scenarioDirectories(config));
  const location = databaseLocation(config);
  const db = openDatabase(location);
  const state = createState(db, config, logger, scenarios);
  seedDefaultAccount(state.accounts, Date.now(), config.clockSpeed);
  const app = createApp(state);
  state.delivery.resumeInterrupted();
  await state.scheduler.start();

  let server: ServerType;
  const info = await new Promise<AddressInfo>((resolve, reject) => {
    server = serve({ fetch: app.fetch, hostname: config.host, port: config.port }, resolve);
    server.once('error', (error) => {
      db.close();
      reject(error);
    });
  });

  const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
  const origin = `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${info.port}`;
  let closing: Promise<void> | undefined;
  return {
    origin,
    cdnUrl: config.cdnUrl ?? `${origin}/cdn`,
    location,
    state,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => {
          void state.scheduler.stop().then(() => {
            db.close();
            resolve();
          });
        });
        // Keep-alive connections would hold close() open; a sandbox has nothing worth waiting for.
        if ('closeAllConnections' in server) server.closeAllConnections();
      });
      return closing;
    },
  };
}
