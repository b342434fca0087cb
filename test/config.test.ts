import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, helpText, parseCommandLine, SETTINGS, webhookTargetsOf } from '../src/config/index.js';

const parse = (argv: string[], env: Record<string, string> = {}) => {
  const result = parseCommandLine(argv, env);
  if (result.help) throw new Error('expected a config, got --help');
  return result.config;
};

describe('command line', () => {
  it('has the contract defaults', () => {
    expect(parse([])).toEqual({
      host: '127.0.0.1',
      port: 4010,
      dataDir: './.sandbox',
      memory: false,
      seed: 'sandbox',
      clockSpeed: 1,
      cdnUrl: undefined,
      scenariosDir: undefined,
      httpsPort: 4443,
      tlsCert: undefined,
      tlsKey: undefined,
      strictHttps: false,
      trustProxy: false,
      noRateLimits: false,
      adminToken: undefined,
      allowHttpWebhooks: false,
      webhookTimeoutMs: 10_000,
      webhookRetries: [60_000, 300_000, 1_800_000, 7_200_000, 28_800_000],
      webhookTargets: undefined,
      webhookAllowHosts: [],
      allowedHosts: [],
      shutdownTimeoutMs: 10_000,
      replicaLeaseMs: 10_000,
      maxConnections: 1000,
      maxConnectionsPerClient: 100,
      portFile: undefined,
      tlsNames: [],
      logFormat: undefined,
      renderThreads: 2,
      logLevel: 'info',
    });
  });

  it('reads every setting from its environment variable', () => {
    const config = parse([], {
      HOST: '0.0.0.0',
      PORT: '0',
      SANDBOX_DATA_DIR: '/tmp/x',
      SANDBOX_MEMORY: 'true',
      SANDBOX_SEED: 'abc',
      SANDBOX_CLOCK_SPEED: '3600',
      SANDBOX_CDN_URL: 'https://cdn.example.test/',
      SANDBOX_SCENARIOS_DIR: './my-scenarios',
      HTTPS_PORT: '0',
      SANDBOX_TLS_CERT: 'cert.pem',
      SANDBOX_TLS_KEY: 'key.pem',
      SANDBOX_STRICT_HTTPS: 'on',
      SANDBOX_TRUST_PROXY: 'true',
      SANDBOX_NO_RATE_LIMITS: '1',
      SANDBOX_ADMIN_TOKEN: 'let-me-in-please',
      SANDBOX_ALLOW_HTTP_WEBHOOKS: '1',
      SANDBOX_WEBHOOK_TIMEOUT: '500ms',
      SANDBOX_WEBHOOK_RETRIES: '10s, 1m',
      SANDBOX_WEBHOOK_TARGETS: 'public',
      SANDBOX_WEBHOOK_ALLOW_HOSTS: 'hooks.ci.internal,10.0.0.5',
      SANDBOX_ALLOWED_HOSTS: 'sandbox.test,[::2]',
      SANDBOX_SHUTDOWN_TIMEOUT: '3s',
      SANDBOX_REPLICA_LEASE: '2s',
      SANDBOX_MAX_CONNECTIONS: '50',
      SANDBOX_MAX_CONNECTIONS_PER_CLIENT: '20',
      SANDBOX_PORT_FILE: '/tmp/ports.json',
      SANDBOX_TLS_NAMES: 'sandbox,Sandbox.CI.internal',
      SANDBOX_LOG_FORMAT: 'json',
      SANDBOX_RENDER_THREADS: '0',
      LOG_LEVEL: 'debug',
    });
    expect(config).toEqual({
      host: '0.0.0.0',
      port: 0,
      dataDir: '/tmp/x',
      memory: true,
      seed: 'abc',
      clockSpeed: 3600,
      cdnUrl: 'https://cdn.example.test',
      scenariosDir: './my-scenarios',
      httpsPort: 0,
      tlsCert: 'cert.pem',
      tlsKey: 'key.pem',
      strictHttps: true,
      trustProxy: true,
      noRateLimits: true,
      adminToken: 'let-me-in-please',
      allowHttpWebhooks: true,
      webhookTimeoutMs: 500,
      webhookRetries: [10_000, 60_000],
      webhookTargets: 'public',
      webhookAllowHosts: ['hooks.ci.internal', '10.0.0.5'],
      allowedHosts: ['sandbox.test', '[::2]'],
      shutdownTimeoutMs: 3_000,
      replicaLeaseMs: 2_000,
      maxConnections: 50,
      maxConnectionsPerClient: 20,
      portFile: '/tmp/ports.json',
      tlsNames: ['sandbox', 'sandbox.ci.internal'],
      logFormat: 'json',
      renderThreads: 0,
      logLevel: 'debug',
    });
  });

  it('lets flags win over the environment', () => {
    const config = parse(['--port', '5000', '--memory', '--log-level=warn'], {
      PORT: '6000',
      LOG_LEVEL: 'debug',
    });
    expect(config.port).toBe(5000);
    expect(config.memory).toBe(true);
    expect(config.logLevel).toBe('warn');
  });

  it('takes a repeatable flag several times, and its variable as a comma-separated list', () => {
    expect(parse(['--webhook-allow-host', 'A.test', '--webhook-allow-host=[::1]']).webhookAllowHosts).toEqual(
      ['a.test', '[::1]'],
    );
    expect(parse([], { SANDBOX_WEBHOOK_ALLOW_HOSTS: 'a.test,,b.test' }).webhookAllowHosts).toEqual([
      'a.test',
      'b.test',
    ]);
  });

  it('takes durations with units, and a plain number as seconds', () => {
    expect(parse(['--webhook-timeout', '90']).webhookTimeoutMs).toBe(90_000);
    expect(parse(['--webhook-timeout', '1.5s']).webhookTimeoutMs).toBe(1500);
    expect(parse(['--webhook-timeout', '250ms']).webhookTimeoutMs).toBe(250);
    expect(parse(['--shutdown-timeout', '2m']).shutdownTimeoutMs).toBe(120_000);
    expect(parse([], { SANDBOX_SHUTDOWN_TIMEOUT: '0' }).shutdownTimeoutMs).toBe(0);
    expect(() => parse(['--shutdown-timeout', 'a while'])).toThrow(
      "Invalid value 'a while' for --shutdown-timeout: must be a duration: a number of seconds, or a number with ms, s, m, h or d (500ms, 90s, 5m, 2h, 3d).",
    );
  });

  it('takes none for a ladder without retries, and whole seconds up to 30 days', () => {
    expect(parse(['--webhook-retries', 'none']).webhookRetries).toEqual([]);
    expect(parse(['--webhook-retries', '1,30d,1.5h']).webhookRetries).toEqual([
      1000, 2_592_000_000, 5_400_000,
    ]);
  });

  it('delivers webhooks locally on a loopback host and publicly elsewhere, unless told', () => {
    expect(webhookTargetsOf(parse([]))).toBe('local');
    expect(webhookTargetsOf(parse(['--host', '::1']))).toBe('local');
    expect(webhookTargetsOf(parse(['--host', '0.0.0.0']))).toBe('public');
    expect(webhookTargetsOf(parse(['--host', '10.1.2.3']))).toBe('public');
    expect(webhookTargetsOf(parse(['--host', '0.0.0.0', '--webhook-targets', 'local']))).toBe('local');
    expect(webhookTargetsOf(parse(['--webhook-targets', 'public']))).toBe('public');
  });

  it('reads false-like values of boolean variables as off', () => {
    expect(parse([], { SANDBOX_MEMORY: '0' }).memory).toBe(false);
    expect(parse([], { SANDBOX_MEMORY: 'false' }).memory).toBe(false);
    expect(parse([], { SANDBOX_MEMORY: 'yes' }).memory).toBe(true);
  });

  it.each([
    [['--port', '70000'], /--port.*between 0 and 65535/],
    [['--port', 'abc'], /--port.*must be a number/],
    [['--clock-speed', '0'], /--clock-speed.*greater than 0/],
    [['--clock-speed', '-2'], /--clock-speed/],
    [['--log-level', 'loud'], /--log-level.*one of fatal, error/],
    [['--cdn-url', 'not a url'], /--cdn-url.*http or https URL/],
    [['--cdn-url', 'ftp://x.test'], /--cdn-url/],
    [['--frobnicate'], /Unknown option '--frobnicate'.*--help/],
    [['--port'], /--port/],
    [['--webhook-timeout', 'soon'], /--webhook-timeout.*duration/],
    [['--webhook-timeout', '5m'], /--webhook-timeout.*between/],
    [['--webhook-retries', '1m,,5m'], /--webhook-retries/],
    [['--webhook-retries', '1m,later'], /--webhook-retries/],
    [['--webhook-retries', '1e300'], /--webhook-retries.*whole number of seconds from 1 second to 30 days/],
    [['--webhook-retries', '99999999d'], /--webhook-retries.*30 days/],
    [['--webhook-retries', '500ms'], /--webhook-retries/],
    [['--webhook-retries', '1.5'], /--webhook-retries/],
    [['--webhook-retries', Array(21).fill('1m').join(',')], /--webhook-retries.*up to 20/],
    [['--webhook-targets', 'anywhere'], /--webhook-targets.*local or public/],
    [['--webhook-allow-host', 'a b'], /'a b' for --webhook-allow-host.*host name or an IP/],
    [['--shutdown-timeout', '1h'], /--shutdown-timeout.*between 0 and 10m/],
    [['--max-connections', '0'], /--max-connections.*at least 1/],
    [['--render-threads', '1.5'], /--render-threads.*whole number/],
    [['--render-threads=-1'], /--render-threads.*0 or more/],
    [['--render-threads', '17'], /--render-threads.*at most 16/],
  ])('stops on bad flags with a clear message: %j', (argv, message) => {
    expect(() => parseCommandLine(argv, {})).toThrow(ConfigError);
    expect(() => parseCommandLine(argv, {})).toThrow(message);
  });

  it('names the environment variable when it is the bad value', () => {
    expect(() => parseCommandLine([], { PORT: 'x' })).toThrow(/environment variable PORT/);
    expect(() => parseCommandLine([], { SANDBOX_MEMORY: 'maybe' })).toThrow(/SANDBOX_MEMORY.*true or false/);
  });

  it('lists every flag and its variable in docs/reference.md', () => {
    const reference = readFileSync(new URL('../docs/reference.md', import.meta.url), 'utf8');
    for (const setting of Object.values(SETTINGS)) {
      expect(reference).toContain(`\`--${setting.flag}`);
      expect(reference).toContain(`\`${setting.env}\``);
    }
  });

  it('prints every flag and its variable in --help', () => {
    expect(parseCommandLine(['--help'], {})).toEqual({ help: true });
    const text = helpText();
    for (const setting of Object.values(SETTINGS)) {
      expect(text).toContain(`--${setting.flag}`);
      expect(text).toContain(setting.env);
    }
  });
});
