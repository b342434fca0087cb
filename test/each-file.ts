import { afterAll } from 'vitest';
import { closeTestDatabases } from './helpers.js';

/**
 * Run before every test file (`setupFiles`), so its hooks belong to each file, also where a worker
 * keeps one module graph for all its files (`isolate: false`): a hook registered by a shared module
 * at its first import would belong to the first file only.
 */
afterAll(closeTestDatabases);
