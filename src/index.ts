/**
 * The package's in-process API: `import { startSandbox } from 'shipping-sandbox'`. A merchant's test
 * suite starts a sandbox the way it starts an in-memory database: on a free loopback port, in memory,
 * with an account of its own, and stops it without leaving anything behind.
 */
import { type Config, SETTINGS, testConfig } from './config/index.js';
import { runConformance } from './conformance/run.js';
import type { ConformanceOptions, ConformanceReport } from './conformance/types.js';
import { accountControls, type CallApp } from './embed/account.js';
import { answerOf } from './embed/answer.js';
import { SandboxError } from './embed/errors.js';
import type { Sandbox, SandboxAccount, SandboxOptions } from './embed/types.js';
import type { DeliveryLog } from './embed/wait-for-delivery.js';
import type { EventEnvelope } from './events/schema.js';
import { type RunningServer, type StartAdvice, startServer } from './server.js';
import { presentAttempt } from './webhooks/service.js';
import type { Sandbox as SandboxApp } from './wiring.js';

export { ConformanceError } from './conformance/errors.js';
export type * from './conformance/types.js';
export type * from './embed/types.js';
export { SandboxError };

/**
 * Runs the conformance script (docs/conformance.md) against another deployment of the API and, side by
 * side, against a sandbox of its own in this process, and resolves with every difference. Rejects with
 * a ConformanceError when the target cannot be reached or refuses the key on the first call.
 */
export function conformance(options: ConformanceOptions): Promise<ConformanceReport> {
  // Three labels are rendered: on this thread, rather than starting render threads for them.
  return runConformance(options, () => startSandbox({ logLevel: 'silent', renderThreads: 0 }));
}

/** What a start-up error tells an embedding caller to change: its options, not flags. */
const OPTIONS_ADVICE: StartAdvice = {
  port: 'choose another port option',
  httpsPort: 'choose another https.port option',
  dataDir: 'choose another dataDir option (or leave it out to keep everything in memory)',
};

/**
 * Starts a sandbox in this process and resolves once it answers: HTTP on a free port of 127.0.0.1,
 * everything in memory unless `dataDir` or `database` is given, no HTTPS unless asked, nothing written to the
 * working directory, and a fresh account (not the fixed default one) whose full key it returns.
 * Several may run at once; `stop()` each.
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  if (options.dataDir !== undefined && options.database !== undefined)
    throw new TypeError('startSandbox(options): give dataDir or database, not both.');
  const config = configOf(options);
  let server: RunningServer;
  let https: Sandbox['https'];
  if (options.https === undefined || options.https === false) {
    server = await startServer(config, undefined, { https: false, advice: OPTIONS_ADVICE });
  } else {
    const running = await startServer(config, undefined, { https: true, advice: OPTIONS_ADVICE });
    const { httpsOrigin, certificatePath } = running;
    https = { origin: httpsOrigin, url: `${httpsOrigin}/v1`, certificatePath };
    server = running;
  }
  const { origin } = server;
  const app = server.sandbox.app;
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= server.close();
    return stopping;
  };
  // Once stopped, the database is closed: a helper says so rather than answering a 500.
  const checkRunning = () => {
    if (stopping) throw new Error('This sandbox is stopped.');
  };
  const callApp: CallApp = async (path, init) => {
    checkRunning();
    return app.request(path, init);
  };
  const deliveries = deliveryLog(server.sandbox, checkRunning);

  const createAccount = async (account: { plan?: string; name?: string } = {}): Promise<SandboxAccount> => {
    const response = await callApp('/_sandbox/accounts', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(account),
    });
    const answer = await answerOf<{ id: string; api_key: string }>(response);
    return accountControls({ accountId: answer.id, apiKey: answer.api_key, origin, callApp, deliveries });
  };

  let first: SandboxAccount;
  try {
    first = await createAccount(options.plan === undefined ? {} : { plan: options.plan });
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    ...first,
    origin,
    url: `${origin}/v1`,
    ...(https && { https }),
    createAccount: (account = {}) => createAccount({ plan: options.plan, ...account }),
    stop,
  };
}

/** Each option and the setting of the command line it stands for, as that setting's text. */
const OPTIONS: {
  [K in keyof SandboxOptions]-?: (
    value: NonNullable<SandboxOptions[K]>,
  ) => Partial<Record<keyof Config, unknown>>;
} = {
  dataDir: (dir) => ({ memory: 'false', dataDir: dir }),
  // The HTTPS certificate, if asked for, is made as for memory: nothing is written to the working directory.
  database: (url) => ({ database: url }),
  seed: (seed) => ({ seed }),
  clockSpeed: (speed) => ({ clockSpeed: speed }),
  // The account's plan: checked by the route that creates it.
  plan: () => ({}),
  https: (https) =>
    typeof https === 'object' ? { httpsPort: https.port, tlsCert: https.cert, tlsKey: https.key } : {},
  logLevel: (level) => ({ logLevel: level }),
  scenariosDir: (dir) => ({ scenariosDir: dir }),
  port: (port) => ({ port }),
  webhookTimeout: (timeout) => ({ webhookTimeoutMs: String(timeout) }),
  webhookRetries: (delays) => ({ webhookRetries: delays.length === 0 ? 'none' : delays.join(',') }),
  webhookTargets: (targets) => ({ webhookTargets: targets }),
  webhookAllowHosts: (hosts) => ({ webhookAllowHosts: [...hosts] }),
  rateLimits: (on) => ({ noRateLimits: on ? 'false' : 'true' }),
  renderThreads: (threads) => ({ renderThreads: threads }),
};

/** The defaults for embedding, with each option checked by the same rules as its command-line flag. */
function configOf(options: SandboxOptions): Config {
  if (typeof options !== 'object' || options === null)
    throw new TypeError('startSandbox(options): options must be an object.');
  // Never the process's environment: a merchant's PORT or LOG_LEVEL is not meant for the sandbox.
  const config: Config = testConfig({ logLevel: 'warn' });
  for (const [name, value] of Object.entries(options)) {
    const toSettings = OPTIONS[name as keyof SandboxOptions] as ((value: unknown) => object) | undefined;
    if (!toSettings)
      throw new TypeError(
        `startSandbox(options): unknown option '${name}'. Known: ${Object.keys(OPTIONS).join(', ')}.`,
      );
    if (value === undefined) continue;
    for (const [key, input] of Object.entries(toSettings(value))) {
      if (input === undefined) continue;
      const parsed = SETTINGS[key as keyof typeof SETTINGS].schema.safeParse(input);
      if (!parsed.success) {
        const reason = parsed.error.issues[0]?.message ?? 'is invalid';
        throw new TypeError(`startSandbox(options): invalid ${name} ${JSON.stringify(value)}: ${reason}.`);
      }
      (config as Record<string, unknown>)[key] = parsed.data;
    }
  }
  return config;
}

/** The account's webhook traffic, read from the webhooks module's tables in-process. */
function deliveryLog(sandbox: SandboxApp, checkRunning: () => void): DeliveryLog {
  const { webhooks, attempts, events } = sandbox.stores;
  const { db } = sandbox;
  return {
    webhooks: (accountId) => {
      checkRunning();
      return webhooks.list(db, accountId);
    },
    attempts: async (webhookId) =>
      (await attempts.attempts(db, webhookId, Number.MAX_SAFE_INTEGER)).map((record) => ({
        attempt: presentAttempt(record),
        dueAt: record.scheduledAt,
        order: record.seq,
      })),
    envelope: async (eventId) => {
      const body = await events.body(db, eventId);
      return body === undefined ? undefined : (JSON.parse(body) as EventEnvelope);
    },
  };
}
