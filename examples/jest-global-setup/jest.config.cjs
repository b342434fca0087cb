/**
 * One sandbox for the whole run (global-setup.cjs, stopped by global-teardown.cjs); each test file
 * takes an account of its own in it (account.cjs). Plain CommonJS: no transform.
 */
module.exports = {
  testEnvironment: 'node',
  transform: {},
  globalSetup: './global-setup.cjs',
  globalTeardown: './global-teardown.cjs',
};
