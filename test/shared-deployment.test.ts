import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import { type Config, testConfig } from '../src/config/index.js';
import { type RunningServer, startServer } from '../src/server.js';
import { DEFAULT_KEY, shipmentRequest } from './helpers.js';

/**
 * A sandbox that others can reach, over real HTTP on loopback: the published default key, and the
 * account settings that only the admin token may change. (A server on 0.0.0.0 is called on
 * 127.0.0.1: no test traffic leaves the machine.)
 */

const ADMIN_TOKEN = 'the-admin-token-of-the-team';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-shared-'));
  dirs.push(dir);
  return dir;
}

async function serve(overrides: Partial<Config>) {
  return startServer(testConfig(overrides), undefined, { https: false });
}

/** A call over the socket; the origin of a server on 0.0.0.0 is already 127.0.0.1. */
async function call(
  server: RunningServer,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const response = await fetch(`${server.origin}${path}`, {
    method,
    headers: {
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

describe('the default account and its published key', () => {
  it.each([
    ['listening on every interface', { host: '0.0.0.0' }],
    ['with an admin token, even on loopback', { adminToken: ADMIN_TOKEN }],
  ])(
    'do not exist %s: the key is refused, and no one gets in without an account',
    async (_where, overrides) => {
      const server = await serve(overrides);
      try {
        const refused = await call(server, 'GET', '/v1/shipments', { key: DEFAULT_KEY });
        expect(refused.status).toBe(401);
        expect(refused.json.error.code).toBe('invalid_api_key');
        expect(refused.json.error.message).toContain('published key');
        // Nor under /_sandbox: no keys minted in it, no revoking it.
        const minted = await call(server, 'POST', '/_sandbox/keys', {
          key: DEFAULT_KEY,
          body: { name: 'mine' },
        });
        expect(minted.status).toBe(401);
        const revoked = await call(server, 'DELETE', `/_sandbox/keys/${DEFAULT_ACCOUNT.api_key.id}`, {
          key: DEFAULT_KEY,
        });
        expect(revoked.status).toBe(401);
        // The account itself was never made.
        expect(
          await server.sandbox.stores.accounts.find(server.sandbox.db, DEFAULT_ACCOUNT.id),
        ).toBeUndefined();
      } finally {
        await server.close();
      }
    },
  );

  it('exist on loopback without an admin token, as before', async () => {
    const server = await serve({});
    try {
      expect((await call(server, 'GET', '/v1/shipments', { key: DEFAULT_KEY })).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('stay locked out of a data directory first served on loopback, whose account keeps its data for its other keys', async () => {
    const dir = dataDir();
    const local = await serve({ memory: false, dataDir: dir });
    let otherKey: string;
    let shipmentId: string;
    try {
      const created = await call(local, 'POST', '/v1/shipments', {
        key: DEFAULT_KEY,
        body: shipmentRequest(),
      });
      expect(created.status).toBe(201);
      shipmentId = created.json.id;
      const minted = await call(local, 'POST', '/_sandbox/keys', {
        key: DEFAULT_KEY,
        body: { name: 'private' },
      });
      otherKey = minted.json.value;
    } finally {
      await local.close();
    }

    for (const overrides of [{ host: '0.0.0.0' }, { adminToken: ADMIN_TOKEN }]) {
      const shared = await serve({ memory: false, dataDir: dir, ...overrides });
      try {
        const refused = await call(shared, 'GET', `/v1/shipments/${shipmentId}`, { key: DEFAULT_KEY });
        expect([refused.status, refused.json.error.code]).toEqual([401, 'invalid_api_key']);
        // A key that was never published still reaches the account's data.
        const read = await call(shared, 'GET', `/v1/shipments/${shipmentId}`, { key: otherKey });
        expect([read.status, read.json.id]).toEqual([200, shipmentId]);
      } finally {
        await shared.close();
      }
    }

    // Back on a developer's machine, the default key works again: nothing was revoked or deleted.
    const again = await serve({ memory: false, dataDir: dir });
    try {
      expect((await call(again, 'GET', `/v1/shipments/${shipmentId}`, { key: DEFAULT_KEY })).status).toBe(
        200,
      );
    } finally {
      await again.close();
    }
  });

  it('are not printed by the command on 0.0.0.0: the ready line has no key and a dashboard link without one', async () => {
    const child = spawn(
      process.execPath,
      [
        'dist/main.js',
        '--host',
        '0.0.0.0',
        '--port',
        '0',
        '--https-port',
        '0',
        '--memory',
        '--log-level',
        'warn',
      ],
      { stdio: 'pipe' },
    );
    try {
      let stdout = '';
      const line = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk) => {
          stdout += String(chunk);
          const found = stdout.split('\n').find((text) => text.includes('"ready":true'));
          if (found) resolve(found);
        });
        child.on('exit', () => reject(new Error('exited before it was ready')));
      });
      const ready = JSON.parse(line);
      expect(ready.apiKey).toBeNull();
      expect(ready.dashboardUrl).toBe(`${ready.origin}/dashboard`);
      expect(stdout).not.toContain(DEFAULT_KEY);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe("an account's plan and rate limiting, on a sandbox with an admin token", () => {
  async function withAccount(overrides: Partial<Config>) {
    const server = await serve(overrides);
    const created = await call(server, 'POST', '/_sandbox/accounts', {
      body: { plan: 'starter' },
      headers: overrides.adminToken ? { authorization: `Bearer ${overrides.adminToken}` } : {},
    });
    expect(created.status).toBe(201);
    return { server, key: created.json.api_key as string };
  }
  const settings = (
    server: RunningServer,
    key: string,
    body: unknown,
    headers: Record<string, string> = {},
  ) => call(server, 'POST', '/_sandbox/account', { key, body, headers });

  it('change only with X-Sandbox-Admin-Token beside the key', async () => {
    const { server, key } = await withAccount({ adminToken: ADMIN_TOKEN });
    try {
      for (const [body, field] of [
        [{ plan: 'enterprise' }, 'plan'],
        [{ rate_limits: false }, 'rate_limits'],
        [{ plan: 'growth', rate_limits: false }, undefined],
        // With another setting beside it, nothing of the request is applied.
        [{ plan: 'enterprise', default_scenario: 'express' }, 'plan'],
      ] as const) {
        const refused = await settings(server, key, body);
        expect(refused.status).toBe(403);
        expect(refused.json.error.code).toBe('admin_token_required');
        expect(refused.json.error.field).toBe(field);
        expect(refused.json.error.message).toContain('X-Sandbox-Admin-Token');
      }
      const wrong = await settings(
        server,
        key,
        { plan: 'enterprise' },
        { 'x-sandbox-admin-token': 'not-the-token!!' },
      );
      expect([wrong.status, wrong.json.error.code]).toEqual([403, 'admin_token_required']);
      // The token alone is no key: the account's key is still needed.
      const tokenOnly = await call(server, 'POST', '/_sandbox/account', {
        body: { plan: 'enterprise' },
        headers: { 'x-sandbox-admin-token': ADMIN_TOKEN },
      });
      expect(tokenOnly.status).toBe(401);

      let account = await call(server, 'GET', '/_sandbox/account', { key });
      expect([account.json.plan, account.json.rate_limits, account.json.default_scenario]).toEqual([
        'starter',
        true,
        'standard',
      ]);
      // Its limits still bite: the starter plan's headers.
      const limited = await fetch(`${server.origin}/v1/shipments`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(limited.headers.get('x-ratelimit-limit')).not.toBeNull();

      // The same values again, and the other settings, are the account's own.
      expect((await settings(server, key, { plan: 'starter', rate_limits: true })).status).toBe(200);
      expect((await settings(server, key, { default_scenario: 'express' })).status).toBe(200);

      const granted = await settings(
        server,
        key,
        { plan: 'enterprise', rate_limits: false },
        { 'X-Sandbox-Admin-Token': ADMIN_TOKEN },
      );
      expect(granted.status).toBe(200);
      account = await call(server, 'GET', '/_sandbox/account', { key });
      expect([account.json.plan, account.json.rate_limits, account.json.default_scenario]).toEqual([
        'enterprise',
        false,
        'express',
      ]);
    } finally {
      await server.close();
    }
  });

  it('change with the key alone on a sandbox without one', async () => {
    const { server, key } = await withAccount({});
    try {
      const changed = await settings(server, key, { plan: 'enterprise', rate_limits: false });
      expect(changed.status).toBe(200);
      expect([changed.json.plan, changed.json.rate_limits]).toEqual(['enterprise', false]);
    } finally {
      await server.close();
    }
  });
});
