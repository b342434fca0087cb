import { type ChildProcess, execFile, spawn } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse as parseYaml } from 'yaml';

/**
 * The package as a merchant gets it: packed by `npm pack` (which builds it, through `prepack`),
 * installed from the tarball into an empty project, and used there as documented: imported, required,
 * type-checked, run by Vitest and by Jest, and started from its command.
 *
 * The packing happens in a copy of the sources, so the build it runs never replaces the `dist/` that
 * other test files are using. Installing compiles nothing: better-sqlite3's installer is pointed at
 * this checkout's own binary, and every other package comes from npm's cache.
 */

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const version = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;

const scratch = mkdtempSync(join(tmpdir(), 'sandbox-package-'));
const stage = join(scratch, 'stage');
const app = join(scratch, 'app');
// The installed project is many thousands of files: removing them takes a while on a busy machine.
afterAll(() => rmSync(scratch, { recursive: true, force: true }), 60_000);

/**
 * npm's own variables (a surrounding `npm test` sets many) would point the inner npm at this project;
 * colours would get in the way of reading the test runners' reports.
 */
function cleanEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^npm_/i.test(name) && !['INIT_CWD', 'FORCE_COLOR'].includes(name),
    ),
  );
  return { ...env, TMPDIR: join(scratch, 'tmp'), NO_COLOR: '1', ...extra };
}

const node = (args: string[], cwd = app) =>
  run(process.execPath, args, { cwd, env: cleanEnvironment(), maxBuffer: 16 * 1024 * 1024 });

/**
 * better-sqlite3's binary from this checkout, in a folder as its installer (prebuild-install) would
 * download it: `build/Release/better_sqlite3.node` in a tarball named for the version, Node's ABI and
 * the platform. Returns the folder; the installer is pointed at it.
 */
async function localPrebuilds(): Promise<string> {
  const directory = join(scratch, 'prebuilds');
  const module = dirname(require.resolve('better-sqlite3/package.json'));
  const { version: sqliteVersion } = JSON.parse(readFileSync(join(module, 'package.json'), 'utf8')) as {
    version: string;
  };
  mkdirSync(join(directory, 'build', 'Release'), { recursive: true });
  copyFileSync(
    join(module, 'build', 'Release', 'better_sqlite3.node'),
    join(directory, 'build', 'Release', 'better_sqlite3.node'),
  );
  const name = `better-sqlite3-v${sqliteVersion}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  await run('tar', ['-czf', name, 'build/Release/better_sqlite3.node'], { cwd: directory });
  return directory;
}

let packedFiles: string[] = [];

beforeAll(async () => {
  mkdirSync(join(scratch, 'tmp'));
  // The sources the build reads, beside the project's node_modules.
  mkdirSync(stage);
  for (const entry of [
    'package.json',
    'README.md',
    'LICENSE',
    'docs',
    'examples',
    'tsconfig.json',
    'tsconfig.build.json',
    'src',
    'fixtures',
    'scenarios',
  ])
    cpSync(entry, join(stage, entry), { recursive: true });
  mkdirSync(join(stage, 'scripts'));
  copyFileSync('scripts/build.mjs', join(stage, 'scripts', 'build.mjs'));
  symlinkSync(realpathSync('node_modules'), join(stage, 'node_modules'), 'dir');

  const packed = await run('npm', ['pack', '--json', '--pack-destination', scratch], {
    cwd: stage,
    env: cleanEnvironment(),
    maxBuffer: 16 * 1024 * 1024,
  });
  const [report] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
  packedFiles = report!.files.map((file) => file.path).sort();

  const prebuilds = await localPrebuilds();

  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'merchant-app', private: true, allowScripts: { 'better-sqlite3': true } }),
  );
  await run(
    'npm',
    ['install', join(scratch, report!.filename), '--prefer-offline', '--no-audit', '--no-fund'],
    {
      cwd: app,
      env: cleanEnvironment({ npm_config_better_sqlite3_local_prebuilds: prebuilds }),
      maxBuffer: 16 * 1024 * 1024,
    },
  );
}, 240_000);

/** Each step starts processes (Node, tsc, a test runner) on a machine other work shares. */
describe('the packed package', { timeout: 90_000 }, () => {
  it('holds what runs, and no sources, tests or source maps', () => {
    expect(packedFiles).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'dist/index.js',
        'dist/index.cjs',
        'dist/client.js',
        'dist/client.cjs',
        'dist/main.js',
        'dist/render-worker.cjs',
        'dist/types/index.d.ts',
        'dist/types/index.d.cts',
        'dist/types/client/index.d.ts',
        'dist/types/client/index.d.cts',
        'fixtures/default-account.json',
        'scenarios/standard.yaml',
        'docs/reference.md',
        'docs/behaviour.md',
        'examples/vitest/first.test.ts',
        'LICENSE',
      ]),
    );
    const unexpected = packedFiles.filter(
      (path) =>
        !/^(dist|fixtures|scenarios|docs|examples)\//.test(path) &&
        !['package.json', 'README.md', 'LICENSE'].includes(path),
    );
    expect(unexpected).toEqual([]);
    expect(packedFiles.filter((path) => path.endsWith('.map'))).toEqual([]);
    // A code cache holds for the folder it was made in (src/launcher.ts): an installed copy makes its own.
    expect(packedFiles.filter((path) => path.startsWith('dist/code-cache/'))).toEqual([]);

    // Every file a declaration names is in the package.
    const installed = join(app, 'node_modules', 'shipping-sandbox');
    for (const path of packedFiles.filter((p) => /\.d\.c?ts$/.test(p))) {
      const text = readFileSync(join(installed, path), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
      for (const [, specifier] of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.[^'"]+)['"]/g)) {
        const named = join(dirname(join(installed, path)), specifier!).replace(/\.(c?)js$/, '.d.$1ts');
        expect(existsSync(named), `${path} names ${specifier}`).toBe(true);
      }
    }
  });

  // The README on npm's page and in node_modules points at docs/ and examples/: they ship with it.
  it('ships what the README links to: every relative link resolves inside the installed package', () => {
    const installed = join(app, 'node_modules', 'shipping-sandbox');
    const readme = readFileSync(join(installed, 'README.md'), 'utf8');
    const targets = [...readme.matchAll(/\]\(([^)\s]+)\)/g)]
      .map(([, target]) => (target as string).split('#')[0] as string)
      .filter((target) => target !== '' && !/^[a-z]+:/i.test(target));
    expect(targets.length).toBeGreaterThan(10);
    expect(targets.filter((target) => !existsSync(join(installed, target)))).toEqual([]);
  });

  // swagger-ui-dist depends on @scarf/scarf, whose install script reports installs to a third party:
  // the package ships the build's copy of Swagger UI instead, and /docs serves it.
  it('installs neither swagger-ui-dist nor @scarf/scarf, and serves Swagger UI offline all the same', async () => {
    const listed = await run('npm', ['ls', 'swagger-ui-dist', '@scarf/scarf', '--all', '--json'], {
      cwd: app,
      env: cleanEnvironment(),
    }).catch((error: { stdout: string }) => error);
    const tree = JSON.parse(listed.stdout) as { dependencies?: Record<string, unknown> };
    expect(tree.dependencies?.['shipping-sandbox']).toBeUndefined();
    expect(existsSync(join(app, 'node_modules', 'swagger-ui-dist'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', '@scarf'))).toBe(false);

    writeFileSync(
      join(app, 'docs.mjs'),
      `import { startSandbox } from 'shipping-sandbox';

const sandbox = await startSandbox();
const answers = [];
for (const [path, mark] of [
  ['/docs', 'docs/assets/swagger-ui-bundle.js'],
  ['/docs/assets/swagger-ui-bundle.js', 'SwaggerUIBundle'],
  ['/docs/assets/swagger-ui.css', '.swagger-ui'],
]) {
  const response = await fetch(sandbox.origin + path);
  answers.push([path, response.status, (await response.text()).includes(mark)]);
}
await sandbox.stop();
console.log(JSON.stringify(answers));
`,
    );
    expect(JSON.parse((await node(['docs.mjs'])).stdout)).toEqual([
      ['/docs', 200, true],
      ['/docs/assets/swagger-ui-bundle.js', 200, true],
      ['/docs/assets/swagger-ui.css', 200, true],
    ]);
  });

  it('is imported by an ES module, which starts a sandbox, calls it, and exits once it is stopped', async () => {
    writeFileSync(
      join(app, 'start.mjs'),
      `import { startSandbox, SandboxError } from 'shipping-sandbox';
import * as client from 'shipping-sandbox/client';

const sandbox = await startSandbox();
const headers = { authorization: 'Bearer ' + sandbox.apiKey, 'content-type': 'application/json' };
const place = { name: 'Ada', address1: '417 Montgomery St', city: 'San Francisco', state: 'CA', zip: '94104', country: 'US' };
const shipment = await (await fetch(sandbox.url + '/shipments', {
  method: 'POST',
  headers,
  body: JSON.stringify({
    from: place,
    to: { ...place, address1: '350 5th Ave', city: 'New York', state: 'NY', zip: '10118' },
    parcel: { weight: 1200, length: 30, width: 20, height: 10 },
  }),
})).json();
const label = await (await fetch(sandbox.url + '/labels', {
  method: 'POST', headers, body: JSON.stringify({ shipment_id: shipment.id }),
})).json();
// The first download renders the PDF on a render thread, which stop() ends too.
const pdf = await fetch(sandbox.url + '/labels/' + label.id + '/download', { headers });
const bytes = new Uint8Array(await pdf.arrayBuffer());
const tracking = await sandbox.advanceShipment(shipment.id, 'delivered');
await sandbox.stop();
console.log(JSON.stringify({
  shipment: shipment.status,
  pdf: [pdf.status, new TextDecoder().decode(bytes.slice(0, 5))],
  tracking: tracking.status,
  errors: typeof SandboxError,
  client: typeof client,
}));
`,
    );
    const { stdout, stderr } = await node(['start.mjs']);
    expect(stderr).toBe('');
    expect(JSON.parse(stdout)).toEqual({
      shipment: 'created',
      pdf: [200, '%PDF-'],
      tracking: 'delivered',
      errors: 'function',
      client: 'object',
    });
  });

  it("is type-checked against its declarations with the project's tsc, for import and require, then run", async () => {
    writeFileSync(
      join(app, 'typed.mts'),
      `import {
  ConformanceError,
  type ConformanceReport,
  conformance,
  type Delivery,
  type Sandbox,
  SandboxError,
  startSandbox,
} from 'shipping-sandbox';
import * as client from 'shipping-sandbox/client';

declare const console: { log(text: string): void };

const sandbox: Sandbox = await startSandbox({ clockSpeed: 2, webhookRetries: ['1m', 300], logLevel: 'silent' });
const before: string = await sandbox.clock.now();
await sandbox.clock.freeze();
const after = await sandbox.clock.advance('1h');
// @ts-expect-error: not a tracking status
const teleport = () => sandbox.advanceShipment('shp_x', 'teleported');
// @ts-expect-error: not an option
const typo = () => startSandbox({ clockSped: 2 });
const wait: (filter?: { event?: 'tracking.delivered' }) => Promise<Delivery> = sandbox.waitForDelivery;
const other = await sandbox.createAccount({ plan: 'enterprise' });
const failure: unknown = await other.advanceShipment('shp_00000000000000000000000000', 'delivered').catch((e) => e);
const check: (options: { target: string; key: string }) => Promise<ConformanceReport> = conformance;
// @ts-expect-error: the target is required
const untargeted = () => conformance({ key: 'svc_test_x' });
const refused: unknown = await check({ target: sandbox.url, key: 'svc_test_nobody' }).catch((e) => e);
await sandbox.stop();
console.log(JSON.stringify({
  movedAtLeastAnHour: Date.parse(after.now) - Date.parse(before) >= 3_600_000,
  code: failure instanceof SandboxError ? failure.code : 'none',
  conformance: refused instanceof ConformanceError ? refused.reason : 'none',
  url: sandbox.url === sandbox.origin + '/v1',
  unused: [typeof teleport, typeof typo, typeof wait, typeof client, typeof untargeted],
}));
`,
    );
    writeFileSync(
      join(app, 'required.cts'),
      `import sandboxPackage = require('shipping-sandbox');
import clientPackage = require('shipping-sandbox/client');

declare const console: { log(text: string): void };

const options: sandboxPackage.SandboxOptions = { seed: 'required', rateLimits: false };
void sandboxPackage.startSandbox(options).then(async (sandbox: sandboxPackage.Sandbox) => {
  const clock: sandboxPackage.ClockState = await sandbox.clock.read();
  const api = clientPackage.createClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey });
  const { data } = await api.GET('/shipments', { params: { query: { limit: 5 } } });
  await sandbox.stop();
  console.log(JSON.stringify({ speed: clock.speed, listed: data?.data.length }));
});
`,
    );
    // No @types/node: the declarations must stand on their own. The DOM's library only, because the
    // client is a fetch client (openapi-fetch): its types name the web's Request and Response, which a
    // program gets from either.
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          lib: ['es2023', 'dom'],
          types: [],
          strict: true,
          skipLibCheck: false,
          // TypeScript's own libraries are not the package's: checking them would only cost time.
          skipDefaultLibCheck: true,
          outDir: 'out',
        },
        files: ['typed.mts', 'required.cts'],
      }),
    );
    await node([require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json']).catch((error) => {
      throw new Error(`tsc: ${error.stdout}${error.stderr}`);
    });
    expect(JSON.parse((await node(['out/typed.mjs'])).stdout)).toEqual({
      movedAtLeastAnHour: true,
      code: 'not_found',
      conformance: 'key_refused',
      url: true,
      unused: ['function', 'function', 'function', 'object', 'function'],
    });
    expect(JSON.parse((await node(['out/required.cjs'])).stdout)).toEqual({ speed: 1, listed: 0 });
  });

  // TypeScript's older resolution (`node`, also called node10) reads no `exports`: `typesVersions`
  // leads it to the client's declarations, and Node's `require` still goes through `exports`.
  it('is type-checked by a project on moduleResolution node, subpath and all, then run', async () => {
    const project = join(app, 'node10');
    mkdirSync(project, { recursive: true });
    writeFileSync(
      join(project, 'index.ts'),
      `import { startSandbox } from 'shipping-sandbox';
import {
  createClient,
  createSandboxClient,
  verifySignature,
  type WebhookPayload,
} from 'shipping-sandbox/client';

declare const console: { log(text: string): void };

async function main(): Promise<void> {
  const sandbox = await startSandbox();
  const api = createClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey });
  const controls = createSandboxClient({ origin: sandbox.origin, apiKey: sandbox.apiKey });
  const { data: list } = await api.GET('/shipments');
  const { data: clock } = await controls.GET('/_sandbox/clock');
  const delivered: WebhookPayload<'tracking.delivered'>['data']['status'] = 'delivered';
  // @ts-expect-error: not an event
  const wrong: WebhookPayload<'parcel.teleported'> | undefined = undefined;
  await sandbox.stop();
  console.log(JSON.stringify({
    total: list?.meta.total,
    frozen: clock?.frozen,
    delivered,
    verified: verifySignature('{}', 'sha256=' + '0'.repeat(64), 'whsec_0123456789abcdef'),
    unused: typeof wrong,
  }));
}
void main();
`,
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'commonjs',
          moduleResolution: 'node',
          // TypeScript 6 warns that this resolution is going away; projects that still use it say so.
          ignoreDeprecations: '6.0',
          target: 'es2022',
          lib: ['es2023', 'dom'],
          types: [],
          strict: true,
          skipLibCheck: false,
          skipDefaultLibCheck: true,
          outDir: 'out',
        },
        files: ['index.ts'],
      }),
    );
    await node([require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json'], project).catch((error) => {
      throw new Error(`tsc: ${error.stdout}${error.stderr}`);
    });
    expect(JSON.parse((await node(['out/index.js'], project)).stdout)).toEqual({
      total: 0,
      frozen: false,
      delivered: 'delivered',
      verified: false,
      unused: 'undefined',
    });
  });

  it("runs the Vitest examples with Vitest, the README's first test among them", async () => {
    cpSync('examples/vitest', join(app, 'vitest-example'), { recursive: true });
    const { stdout } = await node([vitest(), 'run', '--root', 'vitest-example', '--reporter', 'verbose']);
    expect(stdout).toMatch(/✓ .*a delivered parcel reaches our webhook handler, signed/);
    // The README's first test, as it is printed there.
    expect(stdout).toMatch(/✓ .*a parcel we ship can be forced to "delivered"/);
    expect(stdout).toMatch(/Tests\s+2 passed/);
  });

  it('runs the Vitest globalSetup example: one sandbox for the run, an account for each file', async () => {
    cpSync('examples/vitest-global-setup', join(app, 'vitest-global-setup'), { recursive: true });
    const { stdout } = await node([
      vitest(),
      'run',
      '--root',
      'vitest-global-setup',
      '--reporter',
      'verbose',
    ]);
    expect(stdout).toMatch(/✓ .*this file sees its own shipments only, whatever other files create/);
    expect(stdout).toMatch(/✓ .*this file moves its own account's clock, and no other file's/);
    expect(stdout).toMatch(/Test Files\s+2 passed/);
  });

  it('type-checks the Vitest examples against the installed declarations', async () => {
    for (const [folder, source] of [
      ['vitest-example', 'examples/vitest'],
      ['vitest-global-setup', 'examples/vitest-global-setup'],
    ] as const)
      if (!existsSync(join(app, folder))) cpSync(source, join(app, folder), { recursive: true });
    vitest();
    // The merchant's Node types too: the examples run a small HTTP server.
    mkdirSync(join(app, 'node_modules', '@types'), { recursive: true });
    if (!existsSync(join(app, 'node_modules', '@types', 'node')))
      symlinkSync(
        realpathSync('node_modules/@types/node'),
        join(app, 'node_modules', '@types', 'node'),
        'dir',
      );
    writeFileSync(
      join(app, 'tsconfig.examples.json'),
      JSON.stringify({
        // As a Vite or Vitest project is set up: ES modules, resolved as a bundler does.
        compilerOptions: {
          module: 'esnext',
          moduleResolution: 'bundler',
          target: 'es2022',
          lib: ['es2023', 'dom'],
          types: ['node'],
          strict: true,
          // Vitest's own declarations are Vitest's business; the examples' use of them and of the
          // package is what is checked.
          skipLibCheck: true,
          noEmit: true,
        },
        include: ['vitest-example', 'vitest-global-setup'],
      }),
    );
    await node([require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.examples.json']).catch((error) => {
      throw new Error(`tsc: ${error.stdout}${error.stderr}`);
    });
  });

  it('runs the Jest globalSetup example: one sandbox for the run, an account for each file', async () => {
    cpSync('examples/jest-global-setup', join(app, 'jest-global-setup'), { recursive: true });
    const jest = join(dirname(require.resolve('jest/package.json')), 'bin', 'jest.js');
    // Two workers: the files run in other processes than the setup, as on any machine with cores.
    const { stderr } = await node([
      jest,
      '--config',
      'jest-global-setup/jest.config.cjs',
      '--ci',
      '--maxWorkers',
      '2',
      '--cacheDirectory',
      join(scratch, 'jest-cache'),
    ]);
    expect(stderr).toMatch(/PASS .*shipments\.test\.cjs/);
    expect(stderr).toMatch(/PASS .*clock\.test\.cjs/);
    expect(stderr).toMatch(/Tests:\s+2 passed, 2 total/);
    expect(stderr).not.toMatch(/did not exit/);
  });

  it('runs the Jest example with Jest, through require and without a transform', async () => {
    cpSync('examples/jest', join(app, 'jest-example'), { recursive: true });
    const jest = join(dirname(require.resolve('jest/package.json')), 'bin', 'jest.js');
    // Jest reports on stderr; were anything of the sandbox left running after stop(), Jest would not exit.
    const { stderr } = await node([
      jest,
      '--config',
      'jest-example/jest.config.cjs',
      '--ci',
      '--cacheDirectory',
      join(scratch, 'jest-cache'),
    ]);
    expect(stderr).toMatch(/PASS .*shipping\.test\.cjs/);
    expect(stderr).toMatch(/Tests:\s+1 passed, 1 total/);
    expect(stderr).not.toMatch(/did not exit/);
  });

  // The workflow's own steps, run by bash as the runner runs them, in the installed project: the
  // sandbox it starts is the package's. `npm ci` is done (the project is installed); in place of the
  // merchant's `npm test`, one call with what the job gives the tests. Ports are moved to free ones.
  it('runs the GitHub Actions example as written: starts, waits for, uses and stops the sandbox', async () => {
    const workflow = parseYaml(readFileSync('examples/github-actions/sandbox-tests.yml', 'utf8')) as {
      jobs: Record<string, { env: Record<string, string>; steps: { run?: string; if?: string }[] }>;
    };
    const job = Object.values(workflow.jobs)[0];
    if (!job) throw new Error('no job');
    const port = String(await freePort());
    const onFreePort = (text: string) => text.replaceAll('127.0.0.1:4010', `127.0.0.1:${port}`);
    const runnerTemp = mkdtempSync(join(scratch, 'runner-'));
    const githubEnv = join(runnerTemp, 'github-env');
    writeFileSync(githubEnv, '');
    const env: Record<string, string> = {
      ...Object.fromEntries(Object.entries(job.env).map(([name, value]) => [name, onFreePort(value)])),
      RUNNER_TEMP: runnerTemp,
      GITHUB_ENV: githubEnv,
      PORT: port,
      HTTPS_PORT: '0',
    };
    const bash = (script: string) =>
      run('bash', ['-e', '-c', script], { cwd: app, env: cleanEnvironment(env), encoding: 'utf8' });
    /** What a step added to $GITHUB_ENV, for the steps after it. */
    const readGithubEnv = () => {
      for (const line of readFileSync(githubEnv, 'utf8').split('\n').filter(Boolean)) {
        const [name = '', ...value] = line.split('=');
        env[name] = value.join('=');
      }
    };
    try {
      for (const step of job.steps) {
        if (step.run === undefined || step.run === 'npm ci' || step.if === 'failure()') continue;
        if (step.run === 'npm test') {
          const answer = await bash(
            'test -f "$NODE_EXTRA_CA_CERTS" && curl -fsS -H "Authorization: Bearer $SHIPPING_API_KEY" "$SHIPPING_API_URL/shipments"',
          );
          expect(JSON.parse(answer.stdout)).toMatchObject({ data: [], meta: { total: 0 } });
          continue;
        }
        await bash(onFreePort(step.run));
        readGithubEnv();
      }
      // The last step stopped it: the process that its ready line names, the one that served, is gone,
      // having logged nothing but that line.
      const log = readFileSync(join(runnerTemp, 'sandbox.log'), 'utf8');
      const ready = JSON.parse(log.split('\n').find((line) => line.includes('"ready":true')) ?? '{}');
      expect(ready.pid).toBe(Number(env.SANDBOX_PID));
      await vi.waitFor(() => expect(() => process.kill(ready.pid, 0)).toThrow(), { timeout: 15_000 });
      expect(log).not.toMatch(/"level":(50|60)/);
    } finally {
      const pid = Number(env.SANDBOX_PID);
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
    }
  });

  it('installs the shipping-sandbox command: --version, -h, and serving', async () => {
    const bin = join(app, 'node_modules', '.bin', 'shipping-sandbox');
    expect((await run(bin, ['--version'], { cwd: app, env: cleanEnvironment() })).stdout).toBe(
      `${version}\n`,
    );
    expect((await run(bin, ['-h'], { cwd: app, env: cleanEnvironment() })).stdout).toMatch(/Usage:/);
    const viaNpx = await run('npx', ['--offline', 'shipping-sandbox', '--version'], {
      cwd: app,
      env: cleanEnvironment(),
    });
    expect(viaNpx.stdout).toBe(`${version}\n`);

    const server = spawn(bin, ['--memory', '--port', '0', '--https-port', '0', '--log-level', 'warn'], {
      cwd: app,
      env: cleanEnvironment(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const origin = await originOf(server);
      const health = await fetch(`${origin}/healthz`);
      expect(await health.json()).toEqual({ status: 'ok', database: 'sqlite' });
    } finally {
      const exited = new Promise((done) => server.once('exit', done));
      server.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
    // `--memory` writes nothing to the working directory.
    expect(readdirSync(app).filter((name) => name.startsWith('.sandbox'))).toEqual([]);
  });

  it('names the folder it is installed in in its stack traces, never the one it was built in', async () => {
    const installed = realpathSync(join(app, 'node_modules', 'shipping-sandbox', 'dist'));
    const server = spawn(
      process.execPath,
      [
        '-r',
        realpathSync('test/stack-probe.cjs'),
        join(installed, 'main.js'),
        ...['--memory', '--port', '0', '--https-port', '0', '--log-level', 'warn'],
      ],
      {
        cwd: app,
        env: cleanEnvironment({ NODE_DEBUG: 'shipping-sandbox' }),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    const stack = await new Promise<string>((resolveStack, reject) => {
      server.stderr.on('data', (chunk) => {
        stderr += chunk;
        const line = /^STACK (.*)$/m.exec(stderr);
        if (line) resolveStack(JSON.parse(line[1] as string) as string);
      });
      server.once('exit', (code) => reject(new Error(`exited with ${code}: ${stderr}`)));
    });
    const exited = new Promise((done) => server.once('exit', done));
    server.kill('SIGTERM');
    await exited;
    // The package brings no cache: this start compiled the bundle where it is.
    expect(stderr).toMatch(/no code cache for /);
    expect(stack).toContain(`(${join(installed, 'sandbox.cjs')}:`);
    expect(stack).not.toContain(stage);
  });
});

/** A loopback port with nothing listening on it (just freed). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  await new Promise((closed) => server.close(closed));
  return port;
}

/** The merchant has Vitest installed: this project's. Returns its command. */
function vitest(): string {
  const installed = join(app, 'node_modules', 'vitest');
  if (!existsSync(installed)) symlinkSync(realpathSync('node_modules/vitest'), installed, 'dir');
  return join(dirname(require.resolve('vitest/package.json')), 'vitest.mjs');
}

/** The origin the server prints once it listens (in its banner or its ready line). */
function originOf(server: ChildProcess): Promise<string> {
  return new Promise((resolveOrigin, reject) => {
    let output = '';
    server.stdout?.on('data', (chunk) => {
      output += chunk;
      const match = /http:\/\/127\.0\.0\.1:\d+/.exec(output);
      if (match) resolveOrigin(match[0]);
    });
    server.stderr?.on('data', (chunk) => {
      output += chunk;
    });
    server.once('exit', (code) => reject(new Error(`exited with ${code} before listening: ${output}`)));
  });
}
