import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ROOT } from './children.js';
import { percentile, round } from './load.js';
import type { Options } from './options.js';
import type { FigureRow } from './report.js';

type Log = (line: string) => void;

const run = promisify(execFile);

interface EmbedRun {
  importMs: number;
  startMs: number;
  firstAnswerMs: number;
  perAccountMs: number;
  secondSandboxMs: number;
  stopMs: number;
}

/**
 * The package's `startSandbox()` as a merchant's test file meets it: each run is a fresh Node process
 * (as Vitest's and Jest's workers are) that imports the built package (`dist/index.js`), starts a
 * sandbox, and reads its first answer; then makes further accounts in it, starts a second sandbox,
 * and stops both (bench/embed-child.mjs). Medians of several runs.
 */
export async function embed(options: Options, log: Log): Promise<FigureRow[]> {
  const accounts = options.quick ? 50 : 200;
  const once = async (): Promise<EmbedRun> => {
    const { stdout } = await run(
      process.execPath,
      [...options.sandboxNodeArgs, 'bench/embed-child.mjs', String(accounts)],
      { cwd: ROOT },
    );
    return JSON.parse(stdout) as EmbedRun;
  };
  await once(); // warms the file cache; not counted
  const runs: EmbedRun[] = [];
  for (let i = 0; i < options.coldStartRuns; i++) runs.push(await once());
  const median = (pick: (r: EmbedRun) => number, digits = 1) =>
    round(percentile(Float64Array.from(runs.map(pick)).sort(), 50), digits);

  const start = median((r) => r.startMs);
  const answer = median((r) => r.firstAnswerMs - r.importMs);
  const imported = median((r) => r.importMs);
  const perAccount = median((r) => r.perAccountMs, 2);
  const second = median((r) => r.secondSandboxMs);
  log(
    `embed: import ${imported} ms, startSandbox() to first answer ${answer} ms, ` +
      `${perAccount} ms an account, a second sandbox ${second} ms`,
  );
  const of = `median of ${options.coldStartRuns} fresh processes`;
  const details = {
    runs: runs.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, round(v, 2)]))),
  };
  return [
    {
      section: 'embed',
      scenario: `embed: import('shipping-sandbox') in a fresh process (${of})`,
      figure: `${imported} ms`,
      note: 'compiling the bundle is most of it',
      details,
    },
    {
      section: 'embed',
      scenario: `embed: startSandbox() to its first answer (GET /healthz) (${of})`,
      figure: `${answer} ms (startSandbox() resolves in ${start} ms)`,
      target: { text: '< 150 ms', met: answer < 150 },
    },
    {
      section: 'embed',
      scenario: `embed: each further account, createAccount() (mean of ${accounts}, ${of})`,
      figure: `${perAccount} ms`,
      target: { text: '< 3 ms', met: perAccount < 3 },
    },
    {
      section: 'embed',
      scenario: `embed: a second startSandbox() in the same process, to its first answer (${of})`,
      figure: `${second} ms`,
    },
  ];
}
