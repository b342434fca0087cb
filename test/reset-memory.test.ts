import { describe, expect, it } from 'vitest';
import { createTestSandbox, type TestSandbox } from './helpers.js';

/**
 * What the sandbox keeps in memory of an account is let go at the account's reset: asked of the
 * structures themselves, not read off the process's size. Over PostgreSQL a sandbox alone in its
 * database keeps the same.
 */
describe("an account's reset", () => {
  it('drops what is kept in memory for it, and only for it', async () => {
    const sandbox = await createTestSandbox();
    const [a, b] = [await sandbox.newAccount(), await sandbox.newAccount()];
    const ids = { a: await accountIdOf(sandbox, a), b: await accountIdOf(sandbox, b) };
    for (const key of [a, b]) await use(sandbox, key);

    const { shipments } = sandbox.services;
    const { faults, journal, report } = sandbox.ports;
    // Over PostgreSQL the journal and the observations are tables: the reset deletes their rows.
    const held = async (accountId: string) => ({
      answers: shipments.keeps(accountId),
      faultRules: faults.store.keeps(accountId),
      journal: (await journal.journal.recent(accountId, 1000)).length > 0,
      observations: (await report.observations.of(accountId)).requests > 0,
    });
    const inUse = { answers: true, faultRules: true, journal: true, observations: true };
    expect(await held(ids.a)).toEqual(inUse);
    expect(await held(ids.b)).toEqual(inUse);
    const limitsOfA = await remaining(sandbox, a);

    expect((await sandbox.call('POST', '/_sandbox/reset', { key: a })).status).toBe(200);
    expect(await held(ids.a)).toEqual({
      answers: false,
      faultRules: false,
      journal: false,
      observations: false,
    });
    expect(await held(ids.b)).toEqual(inUse);
    // The rate limiter's counts of the account and its keys start again.
    expect(await remaining(sandbox, a)).toBeGreaterThan(limitsOfA);
  });
});

async function accountIdOf(sandbox: TestSandbox, key: string): Promise<string> {
  return (await sandbox.call('GET', '/_sandbox/account', { key })).json.id as string;
}

/** What a client does that the sandbox keeps answers, rules, journal lines and counts of. */
async function use(sandbox: TestSandbox, key: string): Promise<void> {
  const { id } = await sandbox.newShipment({}, key);
  await sandbox.call('POST', '/_sandbox/faults', { key, body: { path: '/v1/nowhere', status: 503 } });
  // Read twice: a page or a shipment is kept from its second read on.
  for (let i = 0; i < 2; i++) {
    expect((await sandbox.call('GET', '/v1/shipments', { key })).status).toBe(200);
    expect((await sandbox.call('GET', `/v1/shipments/${id}`, { key })).status).toBe(200);
  }
}

/** Requests left in the key's tightest window, as the API's headers say. */
async function remaining(sandbox: TestSandbox, key: string): Promise<number> {
  const answer = await sandbox.call('GET', '/v1/shipments?limit=1', { key });
  return Number(answer.headers.get('x-ratelimit-remaining'));
}
