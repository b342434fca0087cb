import { defineConfig } from 'vitest/config';

// One sandbox for the whole run (global-setup.ts); each test file takes an account of its own in it
// (account.ts), so files running side by side never see each other's shipments, webhooks or clock.
export default defineConfig({
  test: {
    globalSetup: './global-setup.ts',
  },
});
