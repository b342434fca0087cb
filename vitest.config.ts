import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    pool: 'forks',
    // Vitest leaves a core free by default; these tests wait on sockets and child processes as much as
    // they compute, so every core gets a worker (on CI's two cores, 72 s instead of 120 s).
    maxWorkers: availableParallelism(),
    testTimeout: 15_000,
  },
});
