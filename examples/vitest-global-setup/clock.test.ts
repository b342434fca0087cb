import { beforeAll, expect, test } from 'vitest';
import { accountForThisFile } from './account.js';

let account: Awaited<ReturnType<typeof accountForThisFile>>;
beforeAll(async () => {
  account = await accountForThisFile('clock.test.ts');
});

test("this file moves its own account's clock, and no other file's", async () => {
  await account.controls.POST('/_sandbox/clock', { body: { frozen: true } });
  const { data: before } = await account.controls.GET('/_sandbox/clock');
  const { data: after } = await account.controls.POST('/_sandbox/clock/advance', { body: { by: '30d' } });
  expect(Date.parse(after?.now ?? '') - Date.parse(before?.now ?? '')).toBe(30 * 86_400_000);
  // The shipments that the other file creates meanwhile are in its own account, not here.
  const { data: shipments } = await account.api.GET('/shipments');
  expect(shipments?.meta.total).toBe(0);
});
