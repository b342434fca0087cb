/**
 * Starts one sandbox before any test file runs: in-process (in Jest's own process), in memory, on a
 * free loopback port. Test files run in Jest's workers, which inherit this process's environment:
 * they find the sandbox by its address in SHIPPING_SANDBOX_ORIGIN.
 */
const { startSandbox } = require('shipping-sandbox');

module.exports = async function globalSetup() {
  const sandbox = await startSandbox();
  process.env.SHIPPING_SANDBOX_ORIGIN = sandbox.origin;
  // For global-teardown.cjs, which runs in this process too.
  globalThis.shippingSandbox = sandbox;
};
