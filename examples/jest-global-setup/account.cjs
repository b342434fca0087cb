/**
 * An account of this test file's own in the run's sandbox: its shipments, webhooks, events and clock
 * are the file's alone. Creating one takes a millisecond and needs no key.
 */
const { createClient, createSandboxClient } = require('shipping-sandbox/client');

async function accountForThisFile(name) {
  const origin = process.env.SHIPPING_SANDBOX_ORIGIN;
  const { data: account, error } = await createSandboxClient({ origin }).POST('/_sandbox/accounts', {
    body: { name },
  });
  if (error) throw new Error(error.error.message);
  return {
    id: account.id,
    /** The API under `/v1`, as the merchant's code calls it. */
    api: createClient({ baseUrl: `${origin}/v1`, apiKey: account.api_key }),
    /** The sandbox's controls for this account: its clock, its parcels' tracking, its events. */
    controls: createSandboxClient({ origin, apiKey: account.api_key }),
  };
}

module.exports = { accountForThisFile };
