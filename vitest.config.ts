import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * The test files that talk to a sandbox's storage run twice: on SQLite, and on a real PostgreSQL
 * server that the run starts itself (test/postgres-setup.ts). The rest (pure functions, the package,
 * the SQLite file itself) run once.
 */
const ON_POSTGRES = [
  'test/account-caps.test.ts',
  'test/account-controls.test.ts',
  'test/auth.test.ts',
  'test/bounds.test.ts',
  'test/cli-logs.test.ts',
  'test/delivery-failures.test.ts',
  'test/errors.test.ts',
  'test/event-subscribers.test.ts',
  'test/journal.test.ts',
  'test/labels-api.test.ts',
  'test/listeners.test.ts',
  'test/methods.test.ts',
  'test/metrics.test.ts',
  'test/page-cache.test.ts',
  'test/paged-lists.test.ts',
  'test/rate-limits.test.ts',
  'test/replicas-accounting.test.ts',
  'test/report.test.ts',
  'test/reset-memory.test.ts',
  'test/request-stream.test.ts',
  'test/sandbox-clock.test.ts',
  'test/sandbox-scopes.test.ts',
  'test/sandbox-twins.test.ts',
  'test/shipments.test.ts',
  'test/tracking-api.test.ts',
  'test/tracking-controls.test.ts',
  'test/webhooks.test.ts',
  'test/writer-lock.test.ts',
];

export default defineConfig({
  test: {
    environment: 'node',
    pool: 'forks',
    // Vitest leaves a core free by default; these tests wait on sockets and child processes as much as
    // they compute, so every core gets a worker (on CI's two cores, 72 s instead of 120 s).
    maxWorkers: availableParallelism(),
    testTimeout: 15_000,
    setupFiles: ['test/each-file.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'sqlite',
          include: ['test/**/*.test.ts'],
          // A worker runs its files one after another in one module graph rather than loading the
          // sandbox's sources again for each (about a third of the run's time on two cores). The
          // PostgreSQL project stays isolated: a file's sandboxes that outlive it would hold
          // connections to the run's one server, whose count is bounded.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: ON_POSTGRES,
          globalSetup: ['test/postgres-setup.ts'],
          env: { SANDBOX_TEST_ENGINE: 'postgres' },
        },
      },
    ],
  },
});
