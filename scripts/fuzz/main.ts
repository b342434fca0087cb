/**
 * The fuzzing pass: `npm run fuzz [-- options]`. Starts a sandbox in this process (in memory, a free
 * port, no logs) unless given `--origin`, fuzzes every operation of its `/openapi.json` over a real
 * socket, prints the summary, and exits 1 when any answer was a 5xx, broke the document, or never
 * came.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { testConfig } from '../../src/config/index.js';
import { type RunningSandbox, startServer } from '../../src/server.js';
import { runFuzz } from './fuzzer.js';
import { summarise } from './report.js';

const HELP = `npm run fuzz [-- options]

  --requests <n>     requests in all, shared among the operations (default 20000)
  --seed <n>         the seed of the generated requests (default 1); the same seed sends the same requests
  --only <text>      only that operation ("POST /v1/shipments"), or every operation whose key contains
                     the text ("webhooks"); repeatable. A finding's "again" line uses it to send the
                     same requests again, to a fresh account
  --concurrency <n>  accounts fuzzed at once (default 4)
  --origin <url>     fuzz a sandbox already running there instead of starting one (it must reach
                     this machine's loopback receiver for its webhooks)
  --json <file>      also write the whole report as JSON
  --help
`;

function positiveInteger(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`--${name} must be a whole number above 0`);
  return value;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string' },
      seed: { type: 'string' },
      only: { type: 'string', multiple: true },
      concurrency: { type: 'string' },
      origin: { type: 'string' },
      json: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const seed = Number(values.seed ?? 1);
  if (!Number.isSafeInteger(seed)) throw new Error('--seed must be a whole number');

  const sandbox: RunningSandbox | undefined = values.origin ? undefined : await startServer(testConfig());
  const origin = values.origin ?? sandbox?.origin ?? '';
  try {
    const report = await runFuzz({
      origin,
      seed,
      requests: positiveInteger('requests', values.requests, 20_000),
      concurrency: positiveInteger('concurrency', values.concurrency, 4),
      ...(values.only ? { only: values.only } : {}),
    });
    process.stdout.write(`${summarise(report)}\n`);
    if (values.json) writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
    return report.serverErrors + report.breaks + report.lost > 0 ? 1 : 0;
  } finally {
    await sandbox?.close();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    process.exitCode = 2;
  },
);
