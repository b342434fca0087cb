import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, ROOT } from './children.js';
import { percentile, round } from './load.js';
import type { Options } from './options.js';
import type { FigureRow } from './report.js';

type Log = (line: string) => void;

const POLL_MS = 5;

/** One `GET /healthz`: its status, or 0 when nothing answers yet. */
function health(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', () => resolve(0));
    req.once('timeout', () => req.destroy());
    req.end();
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function stop(child: ChildProcess, group: boolean): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => {
      try {
        if (group && child.pid) process.kill(-child.pid, 'SIGKILL');
        else child.kill('SIGKILL');
      } catch {}
    }, 5000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    try {
      // `npm start` is npm, then a shell, then node: signal the whole group.
      if (group && child.pid) process.kill(-child.pid, 'SIGTERM');
      else child.kill('SIGTERM');
    } catch {
      resolve();
    }
  });
}

interface Start {
  /** Spawn to the ready line on stdout. */
  bannerMs: number | null;
  /** Spawn to the first 200 from /healthz. */
  healthyMs: number;
}

/** Spawns the command with `--port <free port>` and polls /healthz every 5 ms until it answers 200. */
async function startOnce(
  command: string,
  args: string[],
  group = false,
  env: NodeJS.ProcessEnv = {},
): Promise<Start> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(command, [...args, '--port', String(port)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: group,
    env: { ...process.env, ...env },
  });
  let bannerMs: number | null = null;
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    // In a pipe the sandbox prints its ready line (JSON) where a terminal gets the banner.
    if (bannerMs === null && output.includes('"ready":true')) bannerMs = performance.now() - started;
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${command} ${args.join(' ')} exited:\n${output}`);
      if ((await health(port)) === 200) return { bannerMs, healthyMs: performance.now() - started };
      if (performance.now() - started > 60_000) throw new Error(`no healthy answer in 60 s:\n${output}`);
      await sleep(POLL_MS);
    }
  } finally {
    await stop(child, group);
  }
}

async function series(
  log: Log,
  label: string,
  runs: number,
  command: string,
  args: string[],
  freshTmp = false,
  env: NodeJS.ProcessEnv = {},
) {
  // With `freshTmp`, each start gets an empty TMPDIR of its own: nothing kept from an earlier start.
  const once = async () => {
    if (!freshTmp) return startOnce(command, args, false, env);
    const dir = mkdtempSync(join(tmpdir(), 'sandbox-bench-tmp-'));
    try {
      return await startOnce(command, args, false, { ...env, TMPDIR: dir, TMP: dir, TEMP: dir });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  await once(); // warms the file cache; not counted
  const starts: Start[] = [];
  for (let i = 0; i < runs; i++) starts.push(await once());
  const healthy = Float64Array.from(starts.map((s) => s.healthyMs)).sort();
  const banner = Float64Array.from(starts.map((s) => s.bannerMs ?? Number.NaN)).sort();
  const median = round(percentile(healthy, 50), 1);
  log(`cold start ${label}: median ${median} ms (${[...healthy].map((t) => round(t, 0)).join(', ')})`);
  return {
    median,
    min: round(healthy[0] ?? Number.NaN, 1),
    max: round(healthy[healthy.length - 1] ?? Number.NaN, 1),
    bannerMedian: round(percentile(banner, 50), 1),
    runs: starts.map((s) => ({
      healthyMs: round(s.healthyMs, 1),
      bannerMs: s.bannerMs && round(s.bannerMs, 1),
    })),
  };
}

/** Spawn to the first `200` from `/healthz`, the median of several starts of the real command. */
export async function coldStart(options: Options, log: Log): Promise<FigureRow[]> {
  const rows: FigureRow[] = [];
  const node = process.execPath;
  const memoryArgs = ['dist/main.js', '--memory', '--https-port', '0', '--log-level', 'warn'];
  // A series that fails (the command does not start) is reported, and the others still run.
  const attempt = async (scenario: string, run: () => Promise<void>) => {
    try {
      await run();
    } catch (error) {
      const message = (error as Error).message.split('\n').filter(Boolean).slice(0, 2).join(' ');
      log(`${scenario}: FAILED ${message}`);
      rows.push({
        section: 'cold start',
        scenario,
        figure: `FAILED: ${message}`,
        target: { text: 'starts', met: false },
      });
    }
  };
  await attempt('cold start: node dist/main.js --memory', async () => {
    const memory = await series(log, '--memory', options.coldStartRuns, node, memoryArgs);
    rows.push({
      section: 'cold start',
      scenario: `cold start: node dist/main.js --memory, spawn to first 200 /healthz (median of ${options.coldStartRuns})`,
      figure: `${memory.median} ms (min ${memory.min}, max ${memory.max}; banner ${memory.bannerMedian} ms)`,
      target: { text: '< 300 ms', met: memory.median < 300 },
      details: memory,
    });
  });
  // A fresh CI runner or container: an empty temporary directory, so nothing is kept from an earlier
  // start (no certificate, no code cache of the start's own), only what the build made: dist/ and its
  // code cache, as the Docker image and a build on the runner have them.
  await attempt('cold start: node dist/main.js --memory, empty TMPDIR', async () => {
    const fresh = await series(log, '--memory, empty TMPDIR', options.coldStartRuns, node, memoryArgs, true);
    rows.push({
      section: 'cold start',
      scenario: `cold start on a fresh runner: the same with an empty TMPDIR each time (median of ${options.coldStartRuns})`,
      figure: `${fresh.median} ms (min ${fresh.min}, max ${fresh.max}; banner ${fresh.bannerMedian} ms)`,
      target: { text: '< 250 ms', met: fresh.median < 250 },
      details: fresh,
    });
  });
  // The same where the build's code cache does not fit (another Node version or V8 flags than the
  // build's): the bundle is compiled as it starts.
  await attempt('cold start: empty TMPDIR, SANDBOX_CODE_CACHE=off', async () => {
    const compiling = await series(
      log,
      '--memory, empty TMPDIR, no code cache',
      options.coldStartRuns,
      node,
      memoryArgs,
      true,
      {
        SANDBOX_CODE_CACHE: 'off',
      },
    );
    rows.push({
      section: 'cold start',
      scenario: `cold start on a fresh runner without the build's code cache (SANDBOX_CODE_CACHE=off; median of ${options.coldStartRuns})`,
      figure: `${compiling.median} ms (min ${compiling.min}, max ${compiling.max}; banner ${compiling.bannerMedian} ms)`,
      details: compiling,
    });
  });
  // The same measure of a bare node:http server: what any Node process needs on this machine.
  await attempt('cold start: ceiling', async () => {
    const ceiling = await series(log, 'ceiling', options.coldStartRuns, node, ['bench/ceiling.mjs']);
    rows.push({
      section: 'cold start',
      scenario: `cold start: ceiling (node bench/ceiling.mjs, bare node:http), same measure (median of ${options.coldStartRuns})`,
      figure: `${ceiling.median} ms (min ${ceiling.min}, max ${ceiling.max})`,
      details: ceiling,
    });
  });
  if (options.quick) return rows;

  // A kept data directory: the second and later starts open the file and reuse the certificate.
  const dataDir = mkdtempSync(join(tmpdir(), 'sandbox-bench-'));
  await attempt('cold start: node dist/main.js --data-dir <kept dir>', async () => {
    try {
      const fileArgs = ['dist/main.js', '--data-dir', dataDir, '--https-port', '0', '--log-level', 'warn'];
      const file = await series(log, '--data-dir', options.coldStartRuns, node, fileArgs);
      rows.push({
        section: 'cold start',
        scenario: `cold start: node dist/main.js --data-dir <kept dir> (median of ${options.coldStartRuns})`,
        figure: `${file.median} ms (min ${file.min}, max ${file.max}; banner ${file.bannerMedian} ms)`,
        details: file,
      });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  // `npm start` once: npm itself, then the esbuild build (prestart), then the same node command.
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  await attempt('cold start: npm start -- --memory', async () => {
    const viaNpm = await startOnce(
      npm,
      ['start', '--silent', '--', '--memory', '--https-port', '0', '--log-level', 'warn'],
      true,
    );
    log(`cold start npm start: ${round(viaNpm.healthyMs, 0)} ms`);
    rows.push({
      section: 'cold start',
      scenario: 'cold start: npm start -- --memory (once; includes npm and the esbuild build)',
      figure: `${round(viaNpm.healthyMs, 1)} ms`,
      details: { ...viaNpm },
    });
  });
  return rows;
}
