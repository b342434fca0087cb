import { describe, expect, it } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import type { Scope } from '../src/core/actor.js';
import { createTestSandbox, DEFAULT_KEY, expectError, shipmentRequest, type TestSandbox } from './helpers.js';

/** A key of the default account with only these scopes, made through the API with the full default key. */
async function keyWith(sandbox: TestSandbox, scopes: Scope[]): Promise<{ id: string; value: string }> {
  const made = await sandbox.call('POST', '/_sandbox/keys', { body: { name: scopes.join(' '), scopes } });
  expect(made.status).toBe(201);
  return { id: made.json.id, value: made.json.value };
}

/**
 * Every control route, with a body it accepts, and what it needs: `read`, `write`, `rates` (the
 * comparison's own scope, as under /v1) or a `full` key.
 */
async function controls(sandbox: TestSandbox) {
  const shipment = await sandbox.newShipment();
  await sandbox.call('POST', '/v1/labels', { body: { shipment_id: shipment.id } });
  const hook = await sandbox.call('POST', '/v1/webhooks', {
    body: { url: 'http://127.0.0.1:9/hooks', events: ['shipment.created'], secret: 'whsec_0123456789abcdef' },
  });
  await sandbox.newShipment();
  const delivery = (await sandbox.call('GET', `/_sandbox/webhooks/${hook.json.id}/deliveries`)).json.data[0];
  // The twins of /v1 routes act on shipments of their own: one to label, one to void, one to cancel.
  const [unlabelled, voidable, cancellable] = [
    await sandbox.newShipment(),
    await sandbox.newShipment(),
    await sandbox.newShipment(),
  ];
  const label = (await sandbox.call('POST', '/v1/labels', { body: { shipment_id: voidable.id } })).json;
  const { reference: _reference, ...route } = shipmentRequest();
  return [
    ['GET', '/_sandbox/account', undefined, 'read'],
    ['GET', '/_sandbox/clock', undefined, 'read'],
    ['GET', '/_sandbox/events', undefined, 'read'],
    ['GET', '/_sandbox/scenarios', undefined, 'read'],
    ['GET', '/_sandbox/emails', undefined, 'read'],
    ['GET', '/_sandbox/requests', undefined, 'read'],
    ['GET', '/_sandbox/keys', undefined, 'read'],
    ['GET', `/_sandbox/webhooks/${hook.json.id}/deliveries`, undefined, 'read'],
    ['GET', '/_sandbox/report', undefined, 'read'],
    ['GET', '/_sandbox/report?format=junit', undefined, 'read'],
    ['GET', '/_sandbox/webhooks', undefined, 'read'],
    ['GET', `/_sandbox/labels/${label.id}`, undefined, 'read'],
    ['GET', `/_sandbox/labels/${label.id}/download`, undefined, 'read'],
    ['POST', '/_sandbox/rates', route, 'rates'],
    ['POST', '/_sandbox/shipments', shipmentRequest(), 'write'],
    ['DELETE', `/_sandbox/shipments/${cancellable.id}`, undefined, 'write'],
    ['POST', '/_sandbox/labels', { shipment_id: unlabelled.id }, 'write'],
    ['DELETE', `/_sandbox/labels/${label.id}`, undefined, 'write'],
    [
      'POST',
      '/_sandbox/webhooks',
      { url: 'http://127.0.0.1:9/more', events: ['shipment.created'], secret: 'whsec_0123456789abcdef' },
      'write',
    ],
    ['PATCH', `/_sandbox/webhooks/${hook.json.id}`, { status: 'active' }, 'write'],
    ['POST', '/_sandbox/clock', { frozen: true }, 'write'],
    ['POST', '/_sandbox/clock/advance', { by: 1 }, 'write'],
    ['POST', '/_sandbox/events/trigger', { event: 'tracking.delivered' }, 'write'],
    ['POST', `/_sandbox/shipments/${shipment.id}/advance`, { status: 'accepted' }, 'write'],
    ['POST', `/_sandbox/shipments/${shipment.id}/scenario`, { name: 'express' }, 'write'],
    ['POST', `/_sandbox/shipments/${shipment.id}/events`, { status: 'in_transit' }, 'write'],
    ['POST', `/_sandbox/deliveries/${delivery.id}/redeliver`, undefined, 'write'],
    ['POST', `/_sandbox/webhooks/${hook.json.id}/probe`, undefined, 'write'],
    ['POST', '/_sandbox/keys', { name: 'another' }, 'full'],
    ['POST', '/_sandbox/account', { plan: 'enterprise' }, 'full'],
    ['POST', '/_sandbox/faults', { path: '/v1/shipments', status: 503 }, 'full'],
    ['GET', '/_sandbox/faults', undefined, 'full'],
    ['DELETE', '/_sandbox/faults', undefined, 'full'],
    ['POST', '/_sandbox/reset', undefined, 'full'],
  ] as const;
}

describe('scopes under /_sandbox', () => {
  it.each([
    [['shipments:read'] as Scope[], ['read']],
    [['shipments:write'] as Scope[], ['write']],
    [['shipments:read', 'shipments:write', 'rates:read'] as Scope[], ['read', 'write', 'rates']],
  ])('a key with %j may call the %j controls and no others', async (scopes, allowed) => {
    const sandbox = await createTestSandbox();
    const routes = await controls(sandbox);
    const key = await keyWith(sandbox, scopes);
    for (const [method, path, body, needs] of routes) {
      const response = await sandbox.call(method, path, { key: key.value, body });
      if (allowed.includes(needs)) {
        expect({ method, path, succeeded: response.status === 200 || response.status === 201 }).toEqual({
          method,
          path,
          succeeded: true,
        });
      } else {
        const error = expectError(response, 403, 'insufficient_scope');
        expect(error.message).toMatch(
          needs === 'full'
            ? /full API key/
            : new RegExp(needs === 'rates' ? 'rates:read' : `shipments:${needs}`),
        );
      }
    }
    // Nothing the restricted key was refused happened: the plan, the faults and the keys are as they were.
    const account = await sandbox.call('GET', '/_sandbox/account');
    expect(account.json.plan).toBe(DEFAULT_ACCOUNT.plan);
    expect((await sandbox.call('GET', '/_sandbox/faults')).json.data).toEqual([]);
    expect((await sandbox.call('GET', '/_sandbox/keys')).json.data).toHaveLength(2);
  });

  it('lets a full key call every control', async () => {
    const sandbox = await createTestSandbox();
    for (const [method, path, body] of await controls(sandbox)) {
      const response = await sandbox.call(method, path, { body });
      expect([method, path, response.status < 300]).toEqual([method, path, true]);
    }
  });

  it('never lets a restricted key mint a key, revoke the primary key, reset or change the plan', async () => {
    const sandbox = await createTestSandbox();
    await sandbox.newShipment();
    const reader = await keyWith(sandbox, ['shipments:read']);
    const key = reader.value;
    expectError(
      await sandbox.call('POST', '/_sandbox/keys', { key, body: { name: 'escalate' } }),
      403,
      'insufficient_scope',
    );
    expectError(
      await sandbox.call('POST', '/_sandbox/keys', {
        key,
        body: { name: 'escalate', scopes: ['shipments:read'] },
      }),
      403,
      'insufficient_scope',
    );
    expectError(
      await sandbox.call('DELETE', `/_sandbox/keys/${DEFAULT_ACCOUNT.api_key.id}`, { key }),
      403,
      'insufficient_scope',
    );
    expectError(await sandbox.call('POST', '/_sandbox/reset', { key }), 403, 'insufficient_scope');
    expectError(
      await sandbox.call('POST', '/_sandbox/account', { key, body: { plan: 'starter' } }),
      403,
      'insufficient_scope',
    );
    // The default key still works and the account still has its shipment.
    const list = await sandbox.call('GET', '/v1/shipments', { key: DEFAULT_KEY });
    expect([list.status, list.json.meta.total]).toEqual([200, 1]);
  });

  it('lets any key revoke itself, after which it fails at once', async () => {
    const sandbox = await createTestSandbox();
    const reader = await keyWith(sandbox, ['shipments:read']);
    const revoked = await sandbox.call('DELETE', `/_sandbox/keys/${reader.id}`, { key: reader.value });
    expect(revoked.status).toBe(200);
    expect(revoked.json.id).toBe(reader.id);
    expectError(await sandbox.call('GET', '/_sandbox/clock', { key: reader.value }), 401, 'invalid_api_key');
  });

  it('makes keys with at most the scopes of the key that asks', async () => {
    const sandbox = await createTestSandbox();
    const caller = {
      accountId: DEFAULT_ACCOUNT.id,
      keyId: 'key_reader',
      scopes: ['shipments:read'] as Scope[],
      now: sandbox.wall.now,
    };
    await expect(
      sandbox.services.accounts.createKey(caller, { name: 'x', scopes: ['shipments:write'] }),
    ).rejects.toThrow(/'shipments:write' scope, which it lacks/);
    expect((await sandbox.services.accounts.createKey(caller, { name: 'x' })).scopes).toEqual([
      'shipments:read',
    ]);
  });
});
