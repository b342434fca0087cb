import { parseArgs } from 'node:util';

export const SECTIONS = [
  'cold-start',
  'embed',
  'throughput',
  'scale',
  'labels',
  'clock',
  'webhooks',
  'postgres',
  'replicas',
] as const;
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
  /** Labels bought (each for a shipment of its own) before the labels section reads the memory. */
  labelCount: number;
  /** Due scenario steps for the clock advance. */
  clockSteps: number;
  /** Shipments (so events and deliveries) of the webhook throughput runs. */
  webhookEvents: number;
  only: Set<Section>;
  /**
   * Where the JSON report goes: a full run of every section is a record, kept in git
   * (`bench/results/<date>-<commit>.json`, and `latest.json` beside it); a quick or partial run is a
   * check, written to `bench/results/scratch/latest.json`, which git ignores. `--out` names one file.
   */
  out: string[];
  /** A full run of every section with the default settings: its report is kept. */
  record: boolean;
  /** Extra `node` flags for the sandbox children (`--cpu-prof --cpu-prof-dir=…`). */
  sandboxNodeArgs: string[];
}

const HELP = `npm run bench [-- options]

  --quick               a check in under a minute: short runs, one round, smaller data, targets
                        that need the full counts not judged
                        (also \`npm run bench --quick\`, which npm passes as npm_config_quick)
  --connections <n>     concurrent connections of every load run (default 10)
  --duration <s>        seconds of each measured run (default 10, quick 1)
  --rounds <n>          rounds per endpoint, each measuring the ceiling, what the endpoint is
                        judged against, and the sandbox (default 2, quick 1)
  --only <a,b>          sections to run: ${SECTIONS.join(', ')}
  --out <file>          the JSON report (default: a full run of every section writes
                        bench/results/<date>-<commit>.json and bench/results/latest.json, to commit;
                        a quick or partial run bench/results/scratch/latest.json, which git ignores)
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

/** What names a recorded report: the day it started and the commit it measured. */
export interface RunIdentity {
  date: Date;
  /** The commit's short hash; `-dirty` follows it when src/ had changes not committed. */
  commit: string | null;
  dirty: boolean;
}

export function parseOptions(
  argv: string[],
  env: NodeJS.ProcessEnv,
  identity: RunIdentity = { date: new Date(), commit: null, dirty: false },
): Options | null {
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
  // Only the full benchmark as documented is a record: every section, the default counts and runs,
  // no profiler in the sandbox.
  const record =
    !quick &&
    only.size === SECTIONS.length &&
    [values.connections, values.duration, values.rounds, values['sandbox-node-arg']].every(
      (value) => value === undefined,
    );
  return {
    quick,
    connections: Math.round(positive('connections', values.connections, 10)),
    duration: positive('duration', values.duration, quick ? 1 : 10),
    rounds: Math.round(positive('rounds', values.rounds, quick ? 1 : 2)),
    coldStartRuns: quick ? 3 : 11,
    scaleShipments: quick ? 3_000 : 100_000,
    labelCount: quick ? 500 : 50_000,
    clockSteps: quick ? 2_000 : 10_000,
    webhookEvents: quick ? 300 : 2_000,
    only,
    out: values.out ? [values.out] : record ? recordPaths(identity) : ['bench/results/scratch/latest.json'],
    record: record && values.out === undefined,
    sandboxNodeArgs: values['sandbox-node-arg'] ?? [],
  };
}

function recordPaths({ date, commit, dirty }: RunIdentity): string[] {
  const day = date.toISOString().slice(0, 10);
  const name = `${day}-${commit ?? 'unknown'}${dirty ? '-dirty' : ''}`;
  return [`bench/results/${name}.json`, 'bench/results/latest.json'];
}
