/**
 * The benchmark: `npm run bench` (full, several minutes) or `npm run bench -- --quick` (under a minute).
 *
 * The sandbox runs as its real command (`node --max-semi-space-size=4 dist/main.js --memory
 * --no-rate-limits …`, as `npm start` and the Docker image start it) in a child process, beside a
 * bare `node:http` server (bench/ceiling.mjs) that answers a fixed shipment: the ceiling any Node
 * server reaches on this machine. autocannon, in this process, loads both with the
 * same requests, connections and duration, in alternating rounds; ratios are within one run. The
 * issue's ratio targets are judged against the bare Hono floor (bench/hono-floor.mjs) or another of
 * the sandbox's endpoints, measured in the same rounds. The embed section times the package's
 * in-process `startSandbox()` in fresh processes (bench/embed.ts). Prints tables and writes every
 * figure as JSON: a full run to bench/results/<date>-<commit>.json and latest.json (committed), a quick
 * or partial one to bench/results/scratch/ (ignored). It reports; it asserts nothing.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import {
  buildChanges,
  distFingerprint,
  killAllChildren,
  ROOT,
  SANDBOX_FLAGS,
  SANDBOX_NODE_FLAGS,
} from './children.js';
import { clockAdvance } from './clock.js';
import { coldStart } from './cold-start.js';
import { embed } from './embed.js';
import { labelMemory } from './labels.js';
import { parseOptions } from './options.js';
import { postgres } from './postgres.js';
import { replicas } from './replicas.js';
import { type FigureRow, figureTable, type LoadRow, loadTable, toJson } from './report.js';
import { scale } from './scale.js';
import { throughput } from './throughput.js';
import { webhooks } from './webhooks.js';

function git(args: string[]): string | null {
  try {
    return execFileSync('git', args, {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

function machine() {
  const cpu = cpus();
  return {
    cpuModel: cpu[0]?.model ?? 'unknown',
    cpuCount: cpu.length,
    totalMemoryMiB: Math.round(totalmem() / 1024 / 1024),
    os: `${platform()} ${release()}`,
    node: process.version,
    loadAverageAtStart: loadavg().map((n) => Math.round(n * 100) / 100),
  };
}

/**
 * How busy the machine's CPUs are with other work, in % of all cores, over `ms` (Linux): the benchmark
 * is not running anything then, so this is the noise it will share the machine with.
 */
async function backgroundBusy(ms: number): Promise<number | null> {
  const read = () => {
    const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '')
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    return { idle, total: fields.reduce((a, b) => a + b, 0) };
  };
  try {
    const before = read();
    await new Promise((resolve) => setTimeout(resolve, ms));
    const after = read();
    const total = after.total - before.total;
    return total > 0 ? Math.round((1 - (after.idle - before.idle) / total) * 100) : null;
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  // What a recorded report is named by: the commit, and whether what measures or is measured changed.
  const commit = git(['rev-parse', 'HEAD']);
  const dirty = (git(['status', '--porcelain', '--', 'src', 'bench', 'scripts']) ?? '') !== '';
  const options = parseOptions(process.argv.slice(2), process.env, {
    date: new Date(),
    commit: commit?.slice(0, 7) ?? null,
    dirty,
  });
  if (!options) return;
  if (!existsSync(join(ROOT, 'dist/main.js'))) {
    process.stderr.write(
      'bench: dist/main.js is missing; run `npm run bench` (it builds first) or `npm run build`\n',
    );
    process.exitCode = 1;
    return;
  }
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const startedAt = new Date();
  const info = { ...machine(), otherCpuBusyPctAtStart: await backgroundBusy(1000) };
  log(
    `bench: ${options.quick ? 'quick' : 'full'} run, ${options.connections} connections, ${options.duration} s a run, ` +
      `${options.rounds} round(s) per endpoint; ${info.cpuCount} x ${info.cpuModel}, node ${info.node}; ` +
      `other work keeps the CPUs ${info.otherCpuBusyPctAtStart ?? '?'}% busy`,
  );

  const loadRows: LoadRow[] = [];
  const figures: FigureRow[] = [];
  const timings: Record<string, number> = {};
  const failures: { section: string; error: string }[] = [];
  // A section that fails (a 500 where a label was expected, say) is reported, and the others still run.
  const section = async (name: string, run: () => Promise<void>) => {
    const started = performance.now();
    try {
      await run();
    } catch (error) {
      const message = (error as Error).message.split('\n')[0] ?? String(error);
      log(`bench: section ${name} failed: ${(error as Error).stack ?? error}`);
      failures.push({ section: name, error: message });
      figures.push({
        section: name,
        scenario: `${name}: FAILED`,
        figure: message.slice(0, 160),
        target: { text: 'runs', met: false },
      });
    }
    timings[name] = Math.round(performance.now() - started) / 1000;
  };
  const build = distFingerprint();
  const node = ['node', ...SANDBOX_NODE_FLAGS, ...options.sandboxNodeArgs].join(' ');
  if (options.only.has('cold-start'))
    await section('cold-start', async () => {
      figures.push(...(await coldStart(options, log)));
    });
  if (options.only.has('embed'))
    await section('embed', async () => {
      figures.push(...(await embed(options, log)));
    });
  if (options.only.has('throughput'))
    await section('throughput', async () => {
      const result = await throughput(options, log);
      loadRows.push(...result.rows);
      figures.push(...result.figures);
    });
  if (options.only.has('scale'))
    await section('scale', async () => {
      const result = await scale(options, log);
      loadRows.push(...result.rows);
      figures.push(...result.figures);
    });
  if (options.only.has('labels'))
    await section('labels', async () => {
      figures.push(...(await labelMemory(options, log)));
    });
  if (options.only.has('clock'))
    await section('clock', async () => {
      figures.push(...(await clockAdvance(options, log)));
    });
  if (options.only.has('webhooks'))
    await section('webhooks', async () => {
      const result = await webhooks(options, log);
      loadRows.push(...result.rows);
      figures.push(...result.figures);
    });
  if (options.only.has('postgres'))
    await section('postgres', async () => {
      const result = await postgres(options, log);
      loadRows.push(...result.rows);
      figures.push(...result.figures);
    });
  if (options.only.has('replicas'))
    await section('replicas', async () => {
      const result = await replicas(options, log);
      loadRows.push(...result.rows);
      figures.push(...result.figures);
    });

  const seconds = Math.round((Date.now() - startedAt.getTime()) / 100) / 10;
  const targets = [...loadRows.map((r) => r.target), ...figures.map((f) => f.target)].filter(
    (t) => t !== undefined && !t.text.startsWith('('),
  );
  const missed = targets.filter((t) => t?.met === false).length;
  const judged = targets.filter((t) => t?.met !== null).length;

  const report = {
    date: startedAt.toISOString(),
    seconds,
    machine: {
      ...info,
      loadAverageAtEnd: loadavg().map((n) => Math.round(n * 100) / 100),
      otherCpuBusyPctAtEnd: await backgroundBusy(1000),
    },
    commit,
    dirty,
    recorded: options.record,
    build: { dist: build, changedDuringRun: buildChanges },
    failures,
    settings: {
      mode: options.quick ? 'quick' : 'full',
      connections: options.connections,
      durationSeconds: options.duration,
      pairsPerEndpoint: options.rounds,
      sandboxCommand: `${node} dist/main.js ${SANDBOX_FLAGS.join(' ')}`,
      // The scale section runs a sandbox in each mode: the default database file, then --memory.
      scaleSandboxCommands: [
        `${node} dist/main.js --data-dir <fresh temporary folder> ${SANDBOX_FLAGS.filter((f) => f !== '--memory').join(' ')}`,
        `${node} dist/main.js ${SANDBOX_FLAGS.join(' ')}`,
      ],
      ceilingCommand: 'node bench/ceiling.mjs',
      loadGenerator: 'autocannon (programmatic, in the bench process)',
      scaleShipments: options.scaleShipments,
      labelCount: options.labelCount,
      clockSteps: options.clockSteps,
      webhookEvents: options.webhookEvents,
      sectionSeconds: timings,
    },
    summary: { targets: targets.length, judged, met: judged - missed, missed },
    load: loadRows,
    figures,
  };
  for (const path of options.out) {
    const out = resolve(ROOT, path);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, toJson(report));
  }

  const lines = [
    '',
    `Shipping Sandbox benchmark, ${report.settings.mode} run of ${report.date} (${seconds} s)`,
    `${info.cpuCount} x ${info.cpuModel}, ${info.totalMemoryMiB} MiB, ${info.os}, node ${info.node}; ` +
      `other work kept the CPUs ${report.machine.otherCpuBusyPctAtStart ?? '?'}% busy before the run, ` +
      `${report.machine.otherCpuBusyPctAtEnd ?? '?'}% after`,
    `${options.connections} connections, ${options.duration} s a run, ${options.rounds} round(s) per endpoint; ` +
      'latencies in ms; ÷ ceiling = sandbox rps / ceiling rps, ratio = sandbox rps / the rps of what it is ' +
      'against, each in the same round',
    '',
  ];
  if (loadRows.length) lines.push(loadTable(loadRows), '');
  if (figures.length) lines.push(figureTable(figures), '');
  const notJudged = targets.length - judged;
  lines.push(
    `targets: ${judged - missed} of ${judged} met${notJudged ? ` (${notJudged} not judged in this mode)` : ''}; ` +
      `figures in ${options.out.join(' and ')}${options.record ? ' (a record: commit it)' : ''}`,
    '',
  );
  if (failures.length) {
    lines.push(`FAILED sections: ${failures.map((f) => f.section).join(', ')}`, '');
    process.exitCode = 1;
  }
  if (buildChanges.length)
    lines.push('WARNING: dist/ was rebuilt during the run; the figures mix builds', '');
  process.stdout.write(lines.join('\n'));
}

process.once('SIGINT', () => {
  killAllChildren();
  process.exit(130);
});
try {
  await main();
} catch (error) {
  process.stderr.write(`bench: ${(error as Error).stack ?? error}\n`);
  process.exitCode = 1;
} finally {
  killAllChildren();
}
