import { hostname } from 'node:os';
import { MAX_RETRIES, RETRY_DELAY_RULE, retryDelayMillis } from '../core/duration.js';
import { isLoopbackHost } from '../core/hosts.js';
import { z } from '../core/zod.js';
import { serverOf } from '../db/postgres-url.js';
import { booleanText, durationText, hostNames, LOG_LEVELS, port } from './values.js';

/**
 * Every setting of the sandbox in one table: its flag, its environment variable, its default and
 * its validation. `--help` and the parser come from here, so they cannot drift, and a test checks that
 * docs/reference.md lists every setting.
 */
export interface Setting {
  flag: string;
  env: string;
  /**
   * `boolean` settings are flags without a value (`--memory`); the rest take one (`--port 4010`);
   * `list` ones may be given several times, and their variable separates values with commas.
   */
  kind: 'string' | 'boolean' | 'list';
  placeholder?: string;
  defaultText: string;
  description: string;
  /** The values it takes, when they are a list (for the help and the shell's completion). */
  choices?: readonly string[];
  schema: z.ZodType;
}

const WEBHOOK_TARGETS = ['local', 'public'] as const;
const LOG_FORMATS = ['pretty', 'json'] as const;

export const SETTINGS = {
  host: {
    flag: 'host',
    env: 'HOST',
    kind: 'string',
    placeholder: 'address',
    defaultText: '127.0.0.1',
    description: 'interface to listen on (0.0.0.0 for every interface, as in a container)',
    schema: z.string().trim().min(1, 'must not be empty').default('127.0.0.1'),
  },
  port: {
    flag: 'port',
    env: 'PORT',
    kind: 'string',
    placeholder: 'number',
    defaultText: '4010',
    description: 'HTTP port; 0 picks a free one and the banner shows it',
    schema: port.default(4010),
  },
  dataDir: {
    flag: 'data-dir',
    env: 'SANDBOX_DATA_DIR',
    kind: 'string',
    placeholder: 'path',
    defaultText: './.sandbox',
    description: 'directory of the SQLite database file (created if missing)',
    schema: z.string().trim().min(1, 'must not be empty').default('./.sandbox'),
  },
  database: {
    flag: 'database',
    env: 'DATABASE_URL',
    kind: 'string',
    placeholder: 'url',
    defaultText: 'none (SQLite in --data-dir)',
    description:
      'keep everything in this PostgreSQL database (postgres://user:password@host:5432/db?sslmode=require); ' +
      'several sandboxes with the same URL act as one; not with --memory or --data-dir',
    schema: z
      .string()
      .trim()
      .refine((url) => serverOf(url) !== undefined, {
        message:
          'must be a postgres:// or postgresql:// URL naming its server: a host, or the folder of ' +
          "the server's socket on this machine (postgresql://user:password@/name?host=/var/run/postgresql)",
      })
      .optional(),
  },
  replicaLeaseMs: {
    flag: 'replica-lease',
    env: 'SANDBOX_REPLICA_LEASE',
    kind: 'string',
    placeholder: 'duration',
    defaultText: '10s',
    description:
      'with --database: how long a replica that stopped answering still holds its accounts and webhook sends ' +
      'before another replica takes them over (it beats every quarter of this)',
    schema: durationText
      .prefault('10s')
      .refine((ms) => ms >= 200 && ms <= 600_000, 'must be between 200ms and 10m'),
  },
  memory: {
    flag: 'memory',
    env: 'SANDBOX_MEMORY',
    kind: 'boolean',
    defaultText: 'off',
    description: 'keep everything in memory, no file; all state is lost at exit',
    schema: booleanText.default(false),
  },
  seed: {
    flag: 'seed',
    env: 'SANDBOX_SEED',
    kind: 'string',
    placeholder: 'text',
    defaultText: 'sandbox',
    description: 'seed of generated data (names, places, timelines); the same seed gives the same data',
    schema: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters')
      .default('sandbox'),
  },
  clockSpeed: {
    flag: 'clock-speed',
    env: 'SANDBOX_CLOCK_SPEED',
    kind: 'string',
    placeholder: 'factor',
    defaultText: '1',
    description: "initial speed of new accounts' clocks (1 = real time, 3600 = an hour a second)",
    schema: z.coerce
      .number({ message: 'must be a number' })
      .positive('must be greater than 0')
      .max(1_000_000, 'must be at most 1000000')
      .default(1),
  },
  cdnUrl: {
    flag: 'cdn-url',
    env: 'SANDBOX_CDN_URL',
    kind: 'string',
    placeholder: 'url',
    defaultText: '{origin}/cdn',
    description: 'origin of pre-signed label URLs (a URL without trailing slash)',
    schema: z
      .url({ protocol: /^https?$/, message: 'must be an http or https URL' })
      .transform((u) => u.replace(/\/+$/, ''))
      .optional(),
  },
  scenariosDir: {
    flag: 'scenarios-dir',
    env: 'SANDBOX_SCENARIOS_DIR',
    kind: 'string',
    placeholder: 'path',
    defaultText: 'none',
    description: 'a directory of your own scenario files (YAML or JSON); the built-in scenarios/ always load',
    schema: z.string().trim().min(1, 'must not be empty').optional(),
  },
  httpsPort: {
    flag: 'https-port',
    env: 'HTTPS_PORT',
    kind: 'string',
    placeholder: 'number',
    defaultText: '4443',
    description: 'HTTPS port beside the HTTP one; 0 picks a free one',
    schema: port.default(4443),
  },
  tlsCert: {
    flag: 'tls-cert',
    env: 'SANDBOX_TLS_CERT',
    kind: 'string',
    placeholder: 'path',
    defaultText: 'made at first start',
    description:
      "PEM certificate for the HTTPS listener (with --tls-key); without it one for localhost is made and kept in the data directory (with --memory, in a folder of the system's temporary directory)",
    schema: z.string().trim().min(1, 'must not be empty').optional(),
  },
  tlsKey: {
    flag: 'tls-key',
    env: 'SANDBOX_TLS_KEY',
    kind: 'string',
    placeholder: 'path',
    defaultText: 'made at first start',
    description: 'PEM private key of --tls-cert',
    schema: z.string().trim().min(1, 'must not be empty').optional(),
  },
  strictHttps: {
    flag: 'strict-https',
    env: 'SANDBOX_STRICT_HTTPS',
    kind: 'boolean',
    defaultText: 'off',
    description: 'answer plain-HTTP calls to /v1 with 403 https_required, as the real service does',
    schema: booleanText.default(false),
  },
  trustProxy: {
    flag: 'trust-proxy',
    env: 'SANDBOX_TRUST_PROXY',
    kind: 'boolean',
    defaultText: 'off',
    description: 'believe X-Forwarded-Proto from a TLS-terminating proxy in front of the sandbox',
    schema: booleanText.default(false),
  },
  noRateLimits: {
    flag: 'no-rate-limits',
    env: 'SANDBOX_NO_RATE_LIMITS',
    kind: 'boolean',
    defaultText: 'off',
    description: 'switch rate limits off for every account (headers are still sent)',
    schema: booleanText.default(false),
  },
  adminToken: {
    flag: 'admin-token',
    env: 'SANDBOX_ADMIN_TOKEN',
    kind: 'string',
    placeholder: 'token',
    defaultText: 'none',
    description:
      "require Authorization: Bearer <token> to create accounts, and X-Sandbox-Admin-Token: <token> to change an account's plan or rate limiting (for shared deployments; no default account then)",
    schema: z.string().min(8, 'must be at least 8 characters').optional(),
  },
  allowHttpWebhooks: {
    flag: 'allow-http-webhooks',
    env: 'SANDBOX_ALLOW_HTTP_WEBHOOKS',
    kind: 'boolean',
    defaultText: 'off',
    description: 'accept plain http:// webhook URLs on any host (loopback hosts are always accepted)',
    schema: booleanText.default(false),
  },
  webhookTimeoutMs: {
    flag: 'webhook-timeout',
    env: 'SANDBOX_WEBHOOK_TIMEOUT',
    kind: 'string',
    placeholder: 'duration',
    defaultText: '10s',
    description: 'how long a webhook receiver may take to answer (real time, not the account clock)',
    schema: durationText
      .prefault('10s')
      .refine((ms) => ms >= 1 && ms <= 120_000, 'must be between 1ms and 2m'),
  },
  webhookRetries: {
    flag: 'webhook-retries',
    env: 'SANDBOX_WEBHOOK_RETRIES',
    kind: 'string',
    placeholder: 'list',
    defaultText: '1m,5m,30m,2h,8h',
    description:
      "delays before each retry of a failed webhook delivery, on the account clock (the specification's ladder); none for no retries",
    schema: z
      .string()
      .default('1m,5m,30m,2h,8h')
      .transform((text, ctx) => {
        if (text.trim().toLowerCase() === 'none') return [];
        const delays = text.split(',').map((part) => retryDelayMillis(part));
        if (delays.length > MAX_RETRIES || delays.some((d) => d === undefined)) {
          ctx.addIssue({
            code: 'custom',
            message: `must be up to ${MAX_RETRIES} delays separated by commas, each ${RETRY_DELAY_RULE}, or none`,
          });
          return z.NEVER;
        }
        return delays as number[];
      }),
  },
  webhookTargets: {
    flag: 'webhook-targets',
    env: 'SANDBOX_WEBHOOK_TARGETS',
    kind: 'string',
    placeholder: 'policy',
    defaultText: 'local on a loopback --host, else public',
    description:
      'where webhooks may deliver: local (loopback and private networks too) or public (public addresses only); link-local and cloud metadata addresses are always refused',
    choices: WEBHOOK_TARGETS,
    schema: z.enum(WEBHOOK_TARGETS, { message: 'must be local or public' }).optional(),
  },
  webhookAllowHosts: {
    flag: 'webhook-allow-host',
    env: 'SANDBOX_WEBHOOK_ALLOW_HOSTS',
    kind: 'list',
    placeholder: 'host',
    defaultText: 'none',
    description: 'a host name or address webhooks may deliver to whatever the policy says (repeatable)',
    schema: hostNames({ brackets: true }),
  },
  allowedHosts: {
    flag: 'allowed-host',
    env: 'SANDBOX_ALLOWED_HOSTS',
    kind: 'list',
    placeholder: 'host',
    defaultText: 'none',
    description:
      'on a loopback --host, a name requests may use besides localhost, 127.0.0.1 and ::1 (others get 403 host_not_allowed); repeatable',
    schema: hostNames({ brackets: true }),
  },
  shutdownTimeoutMs: {
    flag: 'shutdown-timeout',
    env: 'SANDBOX_SHUTDOWN_TIMEOUT',
    kind: 'string',
    placeholder: 'duration',
    defaultText: '10s',
    description:
      'on SIGTERM or SIGINT, how long to wait for webhook sends on the wire before exiting (those cut off are sent after the next start)',
    schema: durationText
      .prefault('10s')
      .refine((ms) => ms >= 0 && ms <= 600_000, 'must be between 0 and 10m'),
  },
  maxConnections: {
    flag: 'max-connections',
    env: 'SANDBOX_MAX_CONNECTIONS',
    kind: 'string',
    placeholder: 'number',
    defaultText: '1000',
    description: 'open connections each listener accepts at once; more are refused until some close',
    schema: z.coerce
      .number({ message: 'must be a number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(1_000_000, 'must be at most 1000000')
      .default(1000),
  },
  maxConnectionsPerClient: {
    flag: 'max-connections-per-client',
    env: 'SANDBOX_MAX_CONNECTIONS_PER_CLIENT',
    kind: 'string',
    placeholder: 'number',
    defaultText: '100',
    description:
      'open connections one client address may hold at once, over both ports; more are closed as they arrive (behind a proxy every client is the proxy)',
    schema: z.coerce
      .number({ message: 'must be a number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(1_000_000, 'must be at most 1000000')
      .default(100),
  },
  portFile: {
    flag: 'port-file',
    env: 'SANDBOX_PORT_FILE',
    kind: 'string',
    placeholder: 'path',
    defaultText: 'none',
    description:
      'once listening, write the bound ports there as JSON ({"port","httpsPort","origin"}), for scripts that wait for the sandbox',
    schema: z.string().trim().min(1, 'must not be empty').optional(),
  },
  tlsNames: {
    flag: 'tls-name',
    env: 'SANDBOX_TLS_NAMES',
    kind: 'list',
    placeholder: 'name',
    defaultText: 'localhost, 127.0.0.1, ::1 and this host name',
    description:
      "a host name or address the made HTTPS certificate is valid for besides the defaults (a container's service name, say); repeatable",
    schema: hostNames({ brackets: false }),
  },
  logFormat: {
    flag: 'log-format',
    env: 'SANDBOX_LOG_FORMAT',
    kind: 'string',
    placeholder: 'format',
    defaultText: 'pretty on a terminal, else json',
    description: 'pretty (one readable line a request, step and delivery) or json (one JSON object a line)',
    choices: LOG_FORMATS,
    schema: z.enum(LOG_FORMATS, { message: 'must be pretty or json' }).optional(),
  },
  renderThreads: {
    flag: 'render-threads',
    env: 'SANDBOX_RENDER_THREADS',
    kind: 'string',
    placeholder: 'number',
    defaultText: '2',
    description:
      'worker threads that render PDF and PNG label files (started on the first render, stopped after 30 s idle; 0 renders on the main thread)',
    schema: z.coerce
      .number({ message: 'must be a number' })
      .int('must be a whole number')
      .min(0, 'must be 0 or more')
      .max(16, 'must be at most 16')
      .default(2),
  },
  replicaId: {
    flag: 'replica-id',
    env: 'SANDBOX_REPLICA_ID',
    kind: 'string',
    placeholder: 'id',
    defaultText: '<hostname>-<pid>',
    description:
      'the name of this process among replicas over one --database: every log line carries it as "replica", and so does /metrics',
    schema: z
      .string()
      .trim()
      .max(128, 'must be at most 128 characters')
      // A log field and a Prometheus label: nothing a reader would have to escape.
      .regex(/^[\w.:@-]+$/, 'must be letters, digits and . _ : @ - only')
      .default(() => `${hostname()}-${process.pid}`),
  },
  logLevel: {
    flag: 'log-level',
    env: 'LOG_LEVEL',
    kind: 'string',
    placeholder: 'level',
    defaultText: 'info',
    description: 'how much to log, from fatal (least) to trace (most); silent logs nothing',
    choices: LOG_LEVELS,
    schema: z.enum(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(', ')}` }).default('info'),
  },
} satisfies Record<string, Setting>;

type Settings = typeof SETTINGS;
export type Config = { [K in keyof Settings]: z.output<Settings[K]['schema']> };

/**
 * Where webhooks may deliver: as set, or `local` when the sandbox listens on a loopback address (a
 * developer's machine) and `public` otherwise (a shared deployment).
 */
export function webhookTargetsOf(config: Pick<Config, 'webhookTargets' | 'host'>): 'local' | 'public' {
  if (config.webhookTargets) return config.webhookTargets;
  return listensOnLoopback(config) ? 'local' : 'public';
}

/** Whether the sandbox listens on a loopback address only: a developer's machine, not a shared host. */
export function listensOnLoopback(config: Pick<Config, 'host'>): boolean {
  return isLoopbackHost(config.host);
}

/**
 * Whether the sandbox has the default account, whose key is published (fixtures/, the README): only on
 * a developer's machine, listening on loopback without an admin token. Anywhere else that key would let
 * anyone who reaches the port into an account.
 */
export function offersDefaultAccount(config: Pick<Config, 'host' | 'adminToken'>): boolean {
  return listensOnLoopback(config) && config.adminToken === undefined;
}
