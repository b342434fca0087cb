/** Stops the run's sandbox: Jest then exits with nothing left open. */
module.exports = async function globalTeardown() {
  await globalThis.shippingSandbox?.stop();
};
