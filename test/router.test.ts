import { describe, expect, it } from 'vitest';
import { createTestSandbox } from './helpers.js';

/**
 * Hono's default router tries its fastest matcher (RegExpRouter) and falls back to a slower one
 * (TrieRouter) when a route's shape is beyond it, such as a fixed segment beside a parameter at the
 * same depth (`/listeners/secret` beside `/listeners/:id/…`). The fallback is silent and cost about a
 * quarter of the throughput of a read by id: this fails when a new route brings it back.
 */
describe("the app's routes", () => {
  it("all fit the fastest of Hono's routers", async () => {
    const sandbox = await createTestSandbox();
    expect((await sandbox.call('GET', '/healthz')).status).toBe(200);
    expect(sandbox.app.router.name).toContain('SmartRouter');
    expect(sandbox.app.router.name).toContain('RegExpRouter');
  });
});
