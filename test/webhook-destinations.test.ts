import { describe, expect, it } from 'vitest';
import { createTestSandbox, expectError, type TestSandbox } from './helpers.js';

const SECRET = 'whsec_0123456789abcdef';

const registerBody = (url: string) => ({ url, events: ['shipment.created'], secret: SECRET });

async function register(sandbox: TestSandbox, url: string, key?: string) {
  const response = await sandbox.call('POST', '/v1/webhooks', { key, body: registerBody(url) });
  expect(response.status, response.text).toBe(201);
  return response.json as { id: string };
}

describe('registration refuses destinations that are never reachable', () => {
  const ALWAYS_REFUSED: [string, string, string][] = [
    ['https://169.254.169.254/latest/meta-data/', '169.254.169.254', 'link-local'],
    ['https://2852039166/', '169.254.169.254', 'link-local'],
    ['https://0xA9FEA9FE/', '169.254.169.254', 'link-local'],
    ['https://0251.0376.0251.0376/', '169.254.169.254', 'link-local'],
    ['https://169.254.43518/', '169.254.169.254', 'link-local'],
    ['https://169.254.169.254./', '169.254.169.254', 'link-local'],
    ['https://169.254.170.2/v2/credentials', '169.254.170.2', 'link-local'],
    ['https://[fe80::1]/', 'fe80::1', 'link-local'],
    ['https://[::ffff:169.254.169.254]/', '169.254.169.254', 'link-local'],
    ['https://[::ffff:a9fe:a9fe]/', '169.254.169.254', 'link-local'],
    ['https://[64:ff9b::169.254.169.254]/', '64:ff9b::a9fe:a9fe, which embeds 169.254.169.254', 'link-local'],
    ['https://[2002:a9fe:a9fe::1]/', '2002:a9fe:a9fe::1, which embeds 169.254.169.254', 'link-local'],
    ['https://[::169.254.169.254]/', '::a9fe:a9fe, which embeds 169.254.169.254', 'link-local'],
    ['https://metadata.google.internal/computeMetadata/v1/', 'metadata.google.internal', 'metadata'],
    ['https://METADATA.Google.Internal./', 'metadata.google.internal', 'metadata'],
    ['https://metadata/', 'metadata', 'metadata'],
    ['https://instance-data./latest/', 'instance-data', 'metadata'],
    ['https://[fd00:ec2::254]/', 'fd00:ec2::254', 'metadata'],
    ['https://100.100.100.200/', '100.100.100.200', 'metadata'],
    ['https://0.0.0.0/', '0.0.0.0', 'unspecified'],
    ['https://0/', '0.0.0.0', 'unspecified'],
    ['https://[::]/', '::', 'unspecified'],
    ['https://224.0.0.1/', '224.0.0.1', 'multicast'],
    ['https://[ff02::1]/', 'ff02::1', 'multicast'],
    ['https://255.255.255.255/', '255.255.255.255', 'broadcast'],
  ];

  it.each(ALWAYS_REFUSED)('%s, under either policy, unless allow-listed', async (url, shown, kind) => {
    for (const webhookTargets of ['local', 'public'] as const) {
      const sandbox = createTestSandbox({ webhookTargets });
      const error = expectError(
        await sandbox.call('POST', '/v1/webhooks', { body: registerBody(url) }),
        422,
        'invalid_field',
        'url',
      );
      expect(error.message).toContain(`points at ${shown}`);
      expect(error.message).toContain(kind);
      expect(error.message).toContain('never delivers');
      expect(error.message).toContain('--webhook-allow-host');
      expect((await sandbox.call('GET', '/v1/webhooks')).json.data).toEqual([]);
    }
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    const exempt = createTestSandbox({ webhookTargets: 'public', webhookAllowHosts: [host] });
    expect((await exempt.call('POST', '/v1/webhooks', { body: registerBody(url) })).status).toBe(201);
  });

  it('refuses them when PATCH changes the URL, and keeps the URL it had', async () => {
    const sandbox = createTestSandbox();
    const hook = await register(sandbox, 'https://shop.example.com/hooks');
    const error = expectError(
      await sandbox.call('PATCH', `/v1/webhooks/${hook.id}`, {
        body: { url: 'https://[::ffff:169.254.169.254]/' },
      }),
      422,
      'invalid_field',
      'url',
    );
    expect(error.message).toContain('169.254.169.254');
    expect((await sandbox.call('GET', `/v1/webhooks/${hook.id}`)).json.url).toBe(
      'https://shop.example.com/hooks',
    );
  });
});

describe('registration under --webhook-targets public', () => {
  const PUBLIC_ONLY: [string, string][] = [
    ['https://127.0.0.1/', 'loopback'],
    ['https://127.1/', 'loopback'],
    ['https://2130706433/', 'loopback'],
    ['https://[::1]/', 'loopback'],
    ['https://[::ffff:127.0.0.1]/', 'loopback'],
    ['https://localhost/', 'loopback'],
    ['https://LOCALHOST./', 'loopback'],
    ['https://shop.localhost/', 'loopback'],
    ['https://10.1.2.3/', 'private'],
    ['https://172.16.0.1/', 'private'],
    ['https://172.31.255.254/', 'private'],
    ['https://192.168.1.1/', 'private'],
    ['https://[fc00::1]/', 'private'],
    ['https://[fd12:3456::1]/', 'private'],
    ['https://[::ffff:10.1.2.3]/', 'private'],
    ['https://[64:ff9b::10.1.2.3]/', 'private'],
    ['https://[2002:0a01:0203::1]/', 'private'],
    ['https://100.64.0.1/', 'shared address space'],
    ['https://100.127.255.254/', 'shared address space'],
    ['https://192.0.2.10/', 'reserved'],
    ['https://198.18.0.1/', 'reserved'],
    ['https://240.0.0.1/', 'reserved'],
    ['https://[2001:db8::1]/', 'reserved'],
    ['https://[100::1]/', 'reserved'],
  ];

  it.each(PUBLIC_ONLY)('refuses %s (%s), which the local policy accepts', async (url, kind) => {
    const shared = createTestSandbox({ webhookTargets: 'public' });
    const error = expectError(
      await shared.call('POST', '/v1/webhooks', { body: registerBody(url) }),
      422,
      'invalid_field',
      'url',
    );
    expect(error.message).toContain(kind);
    expect(error.message).toContain('--webhook-targets public');
    expect(error.message).toContain('--webhook-allow-host');

    const local = createTestSandbox({ webhookTargets: 'local' });
    expect((await local.call('POST', '/v1/webhooks', { body: registerBody(url) })).status).toBe(201);
  });

  it.each([
    'https://shop.example.com/hooks',
    'https://93.184.215.14/hooks',
    'https://172.32.0.1/',
    'https://100.128.0.1/',
    'https://[2606:4700:4700::1111]/',
    'https://[64:ff9b::93.184.215.14]/',
  ])('accepts %s', async (url) => {
    const sandbox = createTestSandbox({ webhookTargets: 'public' });
    expect((await sandbox.call('POST', '/v1/webhooks', { body: registerBody(url) })).status).toBe(201);
  });

  it('accepts exactly the hosts the operator allow-listed', async () => {
    const sandbox = createTestSandbox({
      webhookTargets: 'public',
      webhookAllowHosts: ['10.1.2.3', '::1', 'hooks.localhost', '[fd00::7]'],
    });
    for (const url of [
      'https://10.1.2.3/h',
      'https://[::1]:8443/h',
      'https://[0:0::1]/h',
      'https://hooks.localhost./h',
      'https://[fd00:0::7]/h',
    ]) {
      expect((await sandbox.call('POST', '/v1/webhooks', { body: registerBody(url) })).status, url).toBe(201);
    }
    for (const url of ['https://10.1.2.4/h', 'https://127.0.0.1/h', 'https://other.localhost/h']) {
      expectError(
        await sandbox.call('POST', '/v1/webhooks', { body: registerBody(url) }),
        422,
        'invalid_field',
        'url',
      );
    }
  });
});
