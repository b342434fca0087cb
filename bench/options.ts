import { parseArgs } from 'node:util';

export const SECTIONS = ['cold-start', 'embed', 'throughput', 'scale', 'clock', 'webhooks'] as const;
export type Section = (typeof SECTIONS)[number];

export interface Options {
  quick: boolean;
  /** Concurrent connections of every load run, sandbox and ceiling alike. */
  connections: number;
  /** Seconds of each measured run. */
  duration: number;
  /** Ceiling/sandbox pairs per endpoint (ABAB… so that drift hits both). */
  rounds: number;
  coldStartRuns: number;
  /** Shipments in the account of the scale section. */
  scaleShipments: number;
  /** Due scenario steps for the clock advance. */
  clockSteps: number;
  /** Shipments (so events and deliveries) of the webhook throughput runs. */
  webhookEvents: number;
  only: Set<Section>;
  out: string;
  /** Extra `node` flags for the sandbox children (`--cpu-prof --cpu-prof-dir=…`). */
  sandboxNodeArgs: string[];
}

const HELP = `npm run bench [-- options]

  --quick               a check in under a minute: short runs, one ceiling/sandbox pair, smaller data
                        (also \`npm run bench --quick\`, which npm passes as npm_config_quick)
  --connections <n>     concurrent connections of every load run (default 10)
  --duration <s>        seconds of each measured run (default 10, quick 1)
  --rounds <n>          ceiling/sandbox pairs per endpoint (default 2, quick 1)
  --only <a,b>          sections to run: ${SECTIONS.join(', ')}
  --out <file>          the JSON report (default bench/results/latest.json)
  --sandbox-node-arg <flag>  a node flag for the sandbox children, repeatable
                        (e.g. --sandbox-node-arg=--cpu-prof --sandbox-node-arg=--cpu-prof-dir=/tmp/prof)
  --help
`;

const positive = (name: string, text: string | undefined, fallback: number): number => {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
};

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): Options | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean' },
      connections: { type: 'string' },
      duration: { type: 'string' },
      rounds: { type: 'string' },
      only: { type: 'string' },
      out: { type: 'string' },
      'sandbox-node-arg': { type: 'string', multiple: true },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return null;
  }
  // `npm run bench --quick` does not pass the flag on: npm keeps it as its own config, npm_config_quick.
  const npmQuick = env.npm_config_quick;
  const quick = values.quick === true || (npmQuick !== undefined && !['false', '0', ''].includes(npmQuick));
  const only = new Set<Section>();
  for (const name of (values.only ?? SECTIONS.join(',')).split(',')) {
    const section = name.trim() as Section;
    if (!SECTIONS.includes(section))
      throw new Error(`--only: unknown section ${name} (${SECTIONS.join(', ')})`);
    only.add(section);
  }
  return {
    quick,
    connections: Math.round(positive('connections', values.connections, 10)),
    duration: positive('duration', values.duration, quick ? 1 : 10),
    rounds: Math.round(positive('rounds', values.rounds, quick ? 1 : 2)),
    coldStartRuns: quick ? 3 : 11,
    scaleShipments: quick ? 3_000 : 100_000,
    clockSteps: quick ? 2_000 : 10_000,
    webhookEvents: quick ? 300 : 2_000,
    only,
    out: values.out ?? 'bench/results/latest.json',
    sandboxNodeArgs: values['sandbox-node-arg'] ?? [],
  };
}
