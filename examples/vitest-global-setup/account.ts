/**
 * An account of this test file's own in the run's sandbox: its shipments, webhooks, events and clock
 * are the file's alone. Creating one takes a millisecond and needs no key.
 */
import { createClient, createSandboxClient } from 'shipping-sandbox/client';
import { inject } from 'vitest';

export async function accountForThisFile(name: string) {
  const origin = inject('sandboxOrigin');
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
