import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project's root: the sandbox runs from here, as `npm start` would run it. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The flags of every sandbox the benchmark starts: in memory, limits off, any free ports, quiet. A
 * sandbox in the default file mode gets `--data-dir <a fresh temporary folder>` instead of `--memory`.
 */
export const SANDBOX_FLAGS = [
  '--memory',
  '--no-rate-limits',
  '--port',
  '0',
  '--https-port',
  '0',
  '--log-level',
  'warn',
];

/**
 * Node's flags for every sandbox the benchmark starts: those `npm start` and the Docker image start it
 * with (V8's young generation capped at 8 MiB), so that the figures are of the sandbox as it is
 * deployed. Flags given to a run (`--sandbox-node-arg`) come after them, and win.
 */
export const SANDBOX_NODE_FLAGS = ['--max-semi-space-size=4'];

/** The sandbox's ready line: stdout is a pipe, so it prints one JSON line, not the banner. */
const READY_LINE = /"ready":true,.*?"origin":"http:\/\/127\.0\.0\.1:(\d+)"/;
const BANNER_CEILING = /CEILING http:\/\/127\.0\.0\.1:(\d+)/;

export interface Server {
  name: string;
  pid: number;
  url: string;
  /** A file-mode sandbox's data directory (removed when it stops). */
  dataDir?: string;
  child: ChildProcess;
  stop(): Promise<void>;
  /** Throws if the process has exited on its own (a crash, or killed from outside). */
  assertAlive(): void;
}

const running = new Set<ChildProcess>();
/** Data directories of file-mode sandboxes not yet stopped. */
const dataDirs = new Set<string>();

/** Children still running when the benchmark ends (an error, Ctrl-C) are killed with it. */
export function killAllChildren(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  dataDirs.clear();
}

function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  child.kill('SIGTERM');
  if (!(await waitForExit(child, 5000))) {
    child.kill('SIGKILL');
    await waitForExit(child, 2000);
  }
  running.delete(child);
}

/** Spawns a server and resolves once its ready line names the bound port. */
function startServer(
  name: string,
  args: string[],
  ready: RegExp,
  env: NodeJS.ProcessEnv = {},
  nodeArgs: string[] = [],
): Promise<Server> {
  const child = spawn(process.execPath, [...nodeArgs, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  let started = false;
  let stopping = false;
  let died: string | undefined;
  return new Promise<Server>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`${name} did not start within 30 s`)), 30_000);
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      running.delete(child);
      reject(new Error(`${error.message}\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`));
    };
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.length > 100_000) stderr = stderr.slice(-50_000);
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      if (stdout.length < 100_000) stdout += chunk.toString();
      const match = ready.exec(stdout);
      if (match && child.pid !== undefined && !started) {
        started = true;
        clearTimeout(timer);
        stdout = stdout.slice(0, 10_000);
        const pid = child.pid;
        // Say so at once when it dies on its own: every figure after that is of a dead port.
        child.once('exit', (code, signal) => {
          if (stopping) return;
          died = `${name} (pid ${pid}) exited on its own: ${signal ?? `exit code ${code}`}\n${stderr.slice(-4000)}`;
          process.stderr.write(`bench: ${died}\n`);
        });
        resolve({
          name,
          pid,
          url: `http://127.0.0.1:${match[1]}`,
          child,
          stop: () => {
            stopping = true;
            return stopChild(child);
          },
          assertAlive: () => {
            if (died) throw new Error(died);
          },
        });
      }
    });
    child.once('exit', (code, signal) => {
      if (!started) fail(new Error(`${name} exited (${code ?? signal}) before it was ready`));
    });
    child.once('error', fail);
  });
}

/** A hash of everything in dist/: the build every sandbox of the run should start from. */
export function distFingerprint(): string {
  const hash = createHash('sha256');
  const dist = join(ROOT, 'dist');
  for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .sort()) {
    hash.update(entry).update(readFileSync(entry));
  }
  return hash.digest('hex').slice(0, 16);
}

let expectedBuild: string | undefined;
/** Builds that differed from the first one while the run went on (someone rebuilt dist/ meanwhile). */
export const buildChanges: string[] = [];

/** Where a sandbox keeps its data: `--memory`, or the default database file (in a fresh folder). */
export type Storage = 'memory' | 'file';

/**
 * `node dist/main.js --memory --no-rate-limits --port 0 --https-port 0 --log-level warn`; with
 * `storage: 'file'`, `--data-dir <fresh temporary folder>` instead of `--memory`, the folder removed
 * when the sandbox stops; with `database`, `--database <url>` instead.
 */
export async function startSandbox(
  nodeArgs: string[] = [],
  options: { storage?: Storage; database?: string } = {},
): Promise<Server> {
  const build = distFingerprint();
  expectedBuild ??= build;
  if (build !== expectedBuild && !buildChanges.includes(build)) {
    buildChanges.push(build);
    process.stderr.write(
      `bench: WARNING dist/ changed during the run (${expectedBuild} -> ${build}): figures mix builds\n`,
    );
  }
  if (options.database !== undefined) {
    const flags = SANDBOX_FLAGS.filter((flag) => flag !== '--memory');
    return startServer(
      'sandbox',
      ['dist/main.js', '--database', options.database, ...flags],
      READY_LINE,
      {},
      [...SANDBOX_NODE_FLAGS, ...nodeArgs],
    );
  }
  if (options.storage !== 'file') {
    return startServer('sandbox', ['dist/main.js', ...SANDBOX_FLAGS], READY_LINE, {}, [
      ...SANDBOX_NODE_FLAGS,
      ...nodeArgs,
    ]);
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'sandbox-bench-'));
  dataDirs.add(dataDir);
  const removeDir = () => {
    rmSync(dataDir, { recursive: true, force: true });
    dataDirs.delete(dataDir);
  };
  const flags = SANDBOX_FLAGS.filter((flag) => flag !== '--memory');
  let server: Server;
  try {
    server = await startServer('sandbox', ['dist/main.js', '--data-dir', dataDir, ...flags], READY_LINE, {}, [
      ...SANDBOX_NODE_FLAGS,
      ...nodeArgs,
    ]);
  } catch (error) {
    removeDir();
    throw error;
  }
  return {
    ...server,
    dataDir,
    stop: async () => {
      try {
        await server.stop();
      } finally {
        removeDir();
      }
    },
  };
}

/** The bytes of a file-mode sandbox's database: the file and its write-ahead log, in MiB. */
export function databaseFilesMiB(dataDir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dataDir, { withFileTypes: true })) {
    if (entry.isFile() && entry.name.startsWith('sandbox.db'))
      bytes += statSync(join(dataDir, entry.name)).size;
  }
  return Math.round((bytes / 1024 / 1024) * 10) / 10;
}

/** `node bench/ceiling.mjs`, answering `body` to every request. */
export function startCeiling(body: string): Promise<Server> {
  return startServer('ceiling', ['bench/ceiling.mjs'], BANNER_CEILING, { CEILING_BODY: body });
}

/**
 * `node bench/hono-floor.mjs`: Hono with no middleware, answering `body` to `GET /v1/shipments/:id`
 * and `postBody` (201) to `POST /v1/shipments`, whose JSON body it reads.
 */
export function startHonoFloor(body: string, postBody: string): Promise<Server> {
  return startServer('hono floor', ['bench/hono-floor.mjs'], BANNER_CEILING, {
    CEILING_BODY: body,
    CEILING_POST_BODY: postBody,
  });
}

/** A port that was free a moment ago (for the cold start, whose port must be known before the banner). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Resident and peak resident memory of a process, in MiB (Linux `/proc`, else `ps`). */
export function memoryOf(pid: number): { rssMiB: number | null; peakRssMiB: number | null } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => {
      const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
      return match ? Math.round((Number(match[1]) / 1024) * 10) / 10 : null;
    };
    return { rssMiB: kib('VmRSS'), peakRssMiB: kib('VmHWM') };
  } catch {
    try {
      const kib = Number(execFileSync('ps', ['-o', 'rss=', '-p', String(pid)], { encoding: 'utf8' }).trim());
      return { rssMiB: Math.round((kib / 1024) * 10) / 10, peakRssMiB: null };
    } catch {
      return { rssMiB: null, peakRssMiB: null };
    }
  }
}

let clockTicks: number | undefined;

/** CPU time (user + system) a process has used, in milliseconds; null where `/proc` is missing. */
export function cpuMillisOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
  } catch {
    return null;
  }
}
