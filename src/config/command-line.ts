import { parseArgs } from 'node:util';
import { ConfigError } from '../core/errors.js';
import { type Config, SETTINGS, type Setting } from './settings.js';

export type CommandLine = { help: true } | { help: false; config: Config };

/**
 * Reads flags and environment variables into a validated Config, or says exactly which value is
 * wrong. Flags win over environment variables, which win over defaults.
 */
export function parseCommandLine(argv: string[], env: NodeJS.ProcessEnv): CommandLine {
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {
    help: { type: 'boolean' },
  };
  for (const setting of Object.values(SETTINGS) as Setting[]) {
    options[setting.flag] =
      setting.kind === 'list' ? { type: 'string', multiple: true } : { type: setting.kind };
  }

  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false }));
  } catch (error) {
    throw new ConfigError(`${(error as Error).message}. Run with --help to see every flag.`);
  }
  if (values.help) return { help: true };

  const config: Record<string, unknown> = {};
  const given = new Set<string>();
  const flagged = new Set<string>();
  for (const [key, setting] of Object.entries(SETTINGS) as [string, Setting][]) {
    const fromFlag = values[setting.flag];
    const fromEnv = env[setting.env];
    const raw =
      fromFlag ??
      (setting.kind === 'list' && fromEnv !== undefined ? fromEnv.split(',').filter(Boolean) : fromEnv);
    const source = fromFlag === undefined ? `environment variable ${setting.env}` : `--${setting.flag}`;
    const input = typeof raw === 'boolean' ? String(raw) : raw === '' ? undefined : raw;
    if (input !== undefined) given.add(key);
    if (fromFlag !== undefined) flagged.add(key);
    const parsed = setting.schema.safeParse(input);
    if (!parsed.success) {
      const reason = parsed.error.issues[0]?.message ?? 'is invalid';
      const issue = parsed.error.issues[0];
      const value = Array.isArray(raw) && typeof issue?.path[0] === 'number' ? raw[issue.path[0]] : raw;
      throw new ConfigError(`Invalid value '${String(value)}' for ${source}: ${reason}.`);
    }
    config[key] = parsed.data;
  }
  checkStorage(config as Config, given, flagged);
  return { help: false, config: config as Config };
}

/**
 * Settings that are each valid but say two things at once: no start can honour both. A start-up
 * error (exit 1), unlike a malformed value (a usage error, exit 2).
 */
export class ClashingSettings extends Error {
  override name = 'ClashingSettings';
}

/**
 * `--database` keeps everything in PostgreSQL: `--memory`, or `--data-dir` on the command line, beside
 * it says two things at once. `SANDBOX_DATA_DIR` from the environment does not clash (the image sets
 * it): with `--database` the data directory keeps only the HTTPS certificate the sandbox makes.
 */
function checkStorage(config: Config, given: ReadonlySet<string>, flagged: ReadonlySet<string>): void {
  if (config.database === undefined) return;
  const clashing = [
    ...(config.memory && given.has('memory') ? ['--memory'] : []),
    ...(flagged.has('dataDir') ? ['--data-dir'] : []),
  ];
  if (clashing.length > 0)
    throw new ClashingSettings(
      `--database (DATABASE_URL) keeps everything in PostgreSQL; it cannot be given with ${clashing.join(' or ')}, ` +
        'which say where SQLite keeps it. Give one or the other.',
    );
}

/** The text of `--help`, generated from the table above. */
export function helpText(): string {
  const rows = (Object.values(SETTINGS) as Setting[]).map((s) => {
    const flag = `--${s.flag}${s.placeholder ? ` <${s.placeholder}>` : ''}`;
    return `  ${flag.padEnd(26)} ${s.description}\n  ${''.padEnd(26)} env ${s.env}, default ${s.defaultText}`;
  });
  return [
    'Shipping Sandbox: a high-fidelity sandbox of the shipping API.',
    '',
    'Usage: npm start -- [flags]     (or: shipping-sandbox [flags])',
    '',
    'Flags (each also read from its environment variable; flags win):',
    ...rows,
    `  ${'--help'.padEnd(26)} show this text`,
    '',
  ].join('\n');
}

/** Defaults for tests and embedding: everything in memory, a free port, quiet logs. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  const parsed = parseCommandLine([], {});
  if (parsed.help) throw new Error('unreachable');
  return { ...parsed.config, memory: true, port: 0, httpsPort: 0, logLevel: 'silent', ...overrides };
}
