import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import { type Config, parseCommandLine, testConfig, webhookTargetsOf } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import {
  args,
  envOf,
  FLAGS,
  freePort,
  IMAGE_NAME,
  IMAGE_ENV as imageEnv,
  NODE_MAJOR,
  onPort,
  parseDockerfile,
  ROOT,
  read,
  runCheck,
  type Service,
  stagesOf,
  VARIABLES,
} from './container-files.js';

/**
 * The container files, checked without a Docker engine: the Dockerfile, the Compose file, the GitHub
 * Actions workflow and the Testcontainers suite are parsed and must name the image, ports, health
 * check and settings that the sandbox really has. Their health checks run against a real sandbox,
 * and the Compose example's app runs against one set up as its flags say.
 */

let sandbox: RunningSandbox;
let sandboxPort: number;
beforeAll(async () => {
  sandbox = await startServer(testConfig());
  sandboxPort = Number(new URL(sandbox.origin).port);
});
afterAll(() => sandbox.close());

// ---------------------------------------------------------------------------------------------
// The Dockerfile

const dockerfile = parseDockerfile(read('Dockerfile'));
const stages = stagesOf(dockerfile);
const runStage = stages.at(-1) ?? [];
const exposed = args(runStage, 'EXPOSE').flatMap((ports) => ports.split(/\s+/).map(Number));
const HTTP_PORT = Number(imageEnv.PORT);
const HTTPS_PORT = Number(imageEnv.HTTPS_PORT);

describe('the Dockerfile', () => {
  it('builds and runs on the Node major the tests run on', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) {
      const [from = ''] = args(stage, 'FROM');
      expect(from).toMatch(new RegExp(`^node:${NODE_MAJOR}(?:[.-]\\S*)?(?:\\s+AS\\s+\\S+)?$`, 'i'));
    }
  });

  it('runs as the unprivileged node user, with no VOLUME', () => {
    expect(dockerfile.filter((i) => i.keyword === 'VOLUME')).toEqual([]);
    expect(args(runStage, 'USER').at(-1)).toBe('node');
    const keywords = runStage.map((i) => i.keyword);
    expect(keywords.lastIndexOf('USER')).toBeLessThan(keywords.indexOf('ENTRYPOINT'));
  });

  it('listens on every interface, on the ports it exposes, with its data in /data', () => {
    expect(imageEnv).toMatchObject({ HOST: '0.0.0.0', SANDBOX_DATA_DIR: '/data' });
    expect(exposed).toEqual([HTTP_PORT, HTTPS_PORT]);
    expect(HTTP_PORT).toBe(4010);
    expect(HTTPS_PORT).toBe(4443);
    // Every variable it sets or documents is a setting of the sandbox (NODE_ENV and NODE_OPTIONS are Node's).
    const named = [...read('Dockerfile').matchAll(/\b(SANDBOX_[A-Z_]+|HTTPS_PORT|LOG_LEVEL)\b/g)].map(
      ([name]) => name,
    );
    for (const name of [...Object.keys(imageEnv).filter((n) => !n.startsWith('NODE_')), ...named])
      expect(VARIABLES, name).toContain(name);
  });

  it("caps V8's young generation, and makes the code cache under the same node flags", () => {
    expect(imageEnv.NODE_OPTIONS).toBe('--max-semi-space-size=4');
    // V8 refuses a cache made under other flags: the build stage runs the build under the image's.
    const buildStage = stages.find((stage) =>
      args(stage, 'RUN').some((run) => run.includes('npm run build')),
    );
    expect(buildStage).toBeDefined();
    expect(envOf(buildStage ?? []).NODE_OPTIONS).toBe(imageEnv.NODE_OPTIONS);
  });

  it('starts the command the package installs, and passes docker run arguments on to it', () => {
    const entrypoint = JSON.parse(args(runStage, 'ENTRYPOINT')[0] ?? '[]') as string[];
    const bin = (JSON.parse(read('package.json')) as { bin: Record<string, string> }).bin;
    expect(entrypoint).toEqual(['node', bin[IMAGE_NAME]?.replace(/^\.\//, '')]);
    expect(JSON.parse(args(runStage, 'CMD')[0] ?? 'null')).toEqual([]);
  });

  it('copies what the build and the server read, none of it left out by .dockerignore', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim().replace(/^\*\*\//, ''))
      .filter((line) => line !== '' && !line.startsWith('#'));
    const sources = dockerfile
      .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    expect(sources).toEqual(expect.arrayContaining(['scripts', 'src', 'fixtures', 'scenarios']));
    for (const source of sources) {
      expect(existsSync(join(ROOT, source)), source).toBe(true);
      expect(
        ignored.filter((pattern) => source === pattern || source.startsWith(`${pattern}/`)),
        source,
      ).toEqual([]);
    }
  });

  describe('its health check', () => {
    const [healthcheck = ''] = args(runStage, 'HEALTHCHECK');
    const [, options = '', exec = '[]'] = /^((?:--[a-z-]+=\S+\s+)*)CMD\s+(\[.*\])$/s.exec(healthcheck) ?? [];
    const command = JSON.parse(exec) as string[];

    it('asks /healthz at the origin in the port file the image sets, in the exec form', () => {
      expect(options).toMatch(/--interval=\d+s/);
      expect(command.slice(0, 2)).toEqual(['node', '-e']);
      expect(command[2]).toContain('process.env.SANDBOX_PORT_FILE');
      expect(command[2]).toContain("'/healthz'");
      expect(imageEnv.SANDBOX_PORT_FILE).toMatch(/^\/tmp\//);
    });

    // The built command, started as the image starts it but for the port: PORT moved, or --port.
    it.each([
      ['PORT', (port: number) => ({ args: [], env: { PORT: String(port) } })],
      ['--port', (port: number) => ({ args: ['--port', String(port)], env: {} })],
    ])('follows the port the sandbox bound when %s moves it, and fails once it stops', async (_, how) => {
      const dir = mkdtempSync(join(tmpdir(), 'sandbox-healthcheck-'));
      const portFile = join(dir, 'port.json');
      const port = await freePort();
      const { args: extra, env } = how(port);
      const server = spawn(
        process.execPath,
        ['dist/main.js', '--memory', '--https-port', '0', '--log-level', 'warn', ...extra],
        {
          env: { ...process.env, HOST: '127.0.0.1', PORT: '4010', SANDBOX_PORT_FILE: portFile, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      const exited = new Promise((done) => server.once('exit', done));
      try {
        await new Promise<void>((ready, fail) => {
          server.stdout.on('data', (chunk) => {
            if (String(chunk).includes('"ready":true')) ready();
          });
          server.once('exit', (code) => fail(new Error(`the sandbox exited with ${code}`)));
        });
        expect(JSON.parse(readFileSync(portFile, 'utf8')).port).toBe(port);
        expect(await runCheck(command, { SANDBOX_PORT_FILE: portFile })).toBe(0);
      } finally {
        server.kill('SIGTERM');
        await exited;
      }
      // Stopped: the file is gone, and the check fails rather than asking a port nobody holds.
      expect(existsSync(portFile)).toBe(false);
      expect(await runCheck(command, { SANDBOX_PORT_FILE: portFile })).toBe(1);
      rmSync(dir, { recursive: true, force: true });
    });

    it('fails where the port file names a port that nothing listens on', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'sandbox-healthcheck-'));
      const portFile = join(dir, 'port.json');
      writeFileSync(portFile, JSON.stringify({ origin: `http://127.0.0.1:${await freePort()}` }));
      expect(await runCheck(command, { SANDBOX_PORT_FILE: portFile })).toBe(1);
      writeFileSync(portFile, JSON.stringify({ origin: `http://127.0.0.1:${sandboxPort}` }));
      expect(await runCheck(command, { SANDBOX_PORT_FILE: portFile })).toBe(0);
      rmSync(dir, { recursive: true, force: true });
    });
  });
});

// ---------------------------------------------------------------------------------------------
// The Compose example

describe('the Compose example over PostgreSQL', () => {
  const dir = join(ROOT, 'examples/compose');
  const compose = parseYaml(readFileSync(join(dir, 'compose.postgres.yaml'), 'utf8')) as {
    services: Record<string, Service>;
    volumes: Record<string, unknown>;
  };
  const postgres = compose.services.postgres ?? {};
  const sandboxService = compose.services.sandbox ?? {};
  /** The sandbox's settings in its container: the image's variables, the file's, then its flags. */
  const settings = () => {
    const parsed = parseCommandLine(sandboxService.command ?? [], {
      ...imageEnv,
      ...(sandboxService.environment ?? {}),
    });
    if (parsed.help) throw new Error('--help');
    return parsed.config;
  };

  it('keeps the data in the postgres service, as its own user, password and database', () => {
    const url = new URL(settings().database ?? '');
    expect(url.protocol).toBe('postgres:');
    expect(url.hostname).toBe('postgres');
    expect(url.port).toBe('5432');
    const env = postgres.environment ?? {};
    expect([url.username, url.password, url.pathname.slice(1)]).toEqual([
      env.POSTGRES_USER,
      env.POSTGRES_PASSWORD,
      env.POSTGRES_DB,
    ]);
    // The image's data directory is no clash: with --database it keeps only the certificate.
    expect(settings().memory).toBe(false);
  });

  it('starts the sandbox once PostgreSQL is ready, and the app once the sandbox is', () => {
    expect(postgres.image).toMatch(/^postgres:\d+/);
    expect(postgres.healthcheck?.test).toEqual(['CMD', 'pg_isready', '-U', 'sandbox', '-d', 'sandbox']);
    expect(sandboxService.depends_on?.postgres?.condition).toBe('service_healthy');
    expect(compose.services.app?.depends_on?.sandbox?.condition).toBe('service_healthy');
    expect(resolve(dir, sandboxService.build?.context ?? '')).toBe(ROOT);
  });

  it('uses only flags and variables the sandbox has', () => {
    for (const flag of (sandboxService.command ?? []).filter((arg) => arg.startsWith('--')))
      expect(FLAGS, flag).toContain(flag);
    for (const name of Object.keys(sandboxService.environment ?? {})) expect(VARIABLES, name).toContain(name);
  });
});

describe('the Compose example', () => {
  const dir = join(ROOT, 'examples/compose');
  const compose = parseYaml(readFileSync(join(dir, 'compose.yaml'), 'utf8')) as {
    services: Record<string, Service>;
    volumes: Record<string, unknown>;
  };
  const sandboxService = compose.services.sandbox ?? {};
  const app = compose.services.app ?? {};
  const command = sandboxService.command ?? [];
  /** The sandbox's settings in that container: the image's variables, then the file's flags. */
  const settings = () => {
    const parsed = parseCommandLine(command, imageEnv);
    if (parsed.help) throw new Error('--help');
    return parsed.config;
  };

  it("builds this repository's Dockerfile and tags it as the image the examples run", () => {
    expect(resolve(dir, sandboxService.build?.context ?? '')).toBe(ROOT);
    expect(sandboxService.image).toBe(IMAGE_NAME);
    expect(sandboxService.ports).toEqual([`${HTTP_PORT}:${HTTP_PORT}`, `${HTTPS_PORT}:${HTTPS_PORT}`]);
  });

  it('uses only flags the sandbox has', () => {
    const flags = command.filter((arg) => arg.startsWith('--'));
    expect(flags.length).toBeGreaterThan(0);
    for (const flag of flags) expect(FLAGS, flag).toContain(flag);
    for (const name of Object.keys(sandboxService.environment ?? {})) expect(VARIABLES, name).toContain(name);
  });

  it('makes the certificate for the service name, and lets webhooks reach the app over HTTP', () => {
    const config = settings();
    expect(config.tlsNames).toEqual(['sandbox']);
    expect(webhookTargetsOf(config)).toBe('public');
    expect(config.webhookAllowHosts).toEqual(['app']);
    expect(config.allowHttpWebhooks).toBe(true);
    expect(Object.keys(compose.services)).toEqual(expect.arrayContaining([...config.tlsNames]));
    const webhookUrl = new URL(app.environment?.WEBHOOK_URL ?? '');
    expect([webhookUrl.protocol, webhookUrl.hostname]).toEqual(['http:', 'app']);
    const apiUrl = new URL(app.environment?.SHIPPING_API_URL ?? '');
    expect([apiUrl.protocol, apiUrl.hostname, apiUrl.port]).toEqual([
      'https:',
      'sandbox',
      String(HTTPS_PORT),
    ]);
  });

  it('gives the app the certificate from the data volume, and starts it once the sandbox is healthy', () => {
    expect(app.depends_on?.sandbox?.condition).toBe('service_healthy');
    expect(app.image).toMatch(new RegExp(`^node:${NODE_MAJOR}\\b`));
    const dataVolume = sandboxService.volumes?.find((v) => v.endsWith(`:${imageEnv.SANDBOX_DATA_DIR}`));
    const [volume] = dataVolume?.split(':') ?? [];
    expect(Object.keys(compose.volumes)).toContain(volume);
    const mount = app.volumes?.find((v) => v.startsWith(`${volume}:`))?.split(':')[1];
    expect(app.environment?.NODE_EXTRA_CA_CERTS).toBe(`${mount}/tls/cert.pem`);
    expect(app.volumes).toContain('./app:/app:ro');
    expect(existsSync(join(dir, 'app/main.mjs'))).toBe(true);
  });

  it('has a health check on /healthz that passes on a sandbox that is up', async () => {
    const test = sandboxService.healthcheck?.test ?? [];
    expect(test.slice(0, 3)).toEqual(['CMD', 'node', '-e']);
    expect(test[3]).toContain(`http://127.0.0.1:${HTTP_PORT}/healthz`);
    const check = test.slice(1).map((part) => onPort(part, HTTP_PORT, sandboxPort));
    expect(await runCheck(check)).toBe(0);
    const unused = await freePort();
    expect(await runCheck(test.slice(1).map((part) => onPort(part, HTTP_PORT, unused)))).toBe(1);
  });

  describe("the app, against a sandbox set as the file's flags say", () => {
    let appSandbox: RunningSandbox;
    let dataDir: string;
    beforeAll(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'sandbox-compose-'));
      const config = settings();
      // On loopback here, where the services' names do not resolve: `app` becomes localhost, and
      // the policy stays the one the container's address gives.
      const local: Config = {
        ...config,
        host: '127.0.0.1',
        port: 0,
        httpsPort: 0,
        memory: false,
        dataDir,
        logLevel: 'silent',
        webhookTargets: webhookTargetsOf(config),
        webhookAllowHosts: config.webhookAllowHosts.map((host) => (host === 'app' ? 'localhost' : host)),
      };
      appSandbox = await startServer(local);
    });
    afterAll(async () => {
      await appSandbox?.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('creates an account, a webhook, a shipment and a label, and receives both webhooks signed', async () => {
      const port = await freePort();
      const child = spawn(process.execPath, [join(dir, 'app/main.mjs')], {
        env: {
          ...process.env,
          SHIPPING_API_URL: `${appSandbox.httpsOrigin}/v1`,
          NODE_EXTRA_CA_CERTS: appSandbox.certificatePath,
          WEBHOOK_URL: `http://localhost:${port}/webhooks`,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk) => {
        output += chunk;
      });
      child.stderr.on('data', (chunk) => {
        output += chunk;
      });
      const code = await new Promise((exited) => child.on('exit', exited));
      expect({ code, output }).toEqual({ code: 0, output: expect.stringContaining('every webhook arrived') });
      expect(output).toMatch(/webhook shipment\.created evt_/);
      expect(output).toMatch(/webhook label\.generated evt_/);
    }, 40_000);
  });
});

// ---------------------------------------------------------------------------------------------
// The GitHub Actions example (test/package.test.ts runs its steps against the installed package)

describe('the GitHub Actions example', () => {
  const workflow = parseYaml(read('examples/github-actions/sandbox-tests.yml')) as {
    jobs: Record<
      string,
      {
        services?: unknown;
        env: Record<string, string>;
        steps: Array<{ name?: string; run?: string; uses?: string; with?: Record<string, unknown> }>;
      }
    >;
  };
  const job = Object.values(workflow.jobs)[0];
  const steps = job?.steps ?? [];
  const index = (test: (step: (typeof steps)[number]) => boolean) => steps.findIndex(test);

  it('needs no published image: it installs the project, the sandbox with it, and starts that', () => {
    expect(job?.services).toBeUndefined();
    const install = index((step) => step.run === 'npm ci');
    const start = index((step) => step.run?.includes('node_modules/.bin/shipping-sandbox') === true);
    expect(install).toBeGreaterThanOrEqual(0);
    expect(start).toBeGreaterThan(install);
    const setup = steps.find((step) => step.uses?.startsWith('actions/setup-node'));
    expect(String(setup?.with?.['node-version'])).toBe(NODE_MAJOR);
  });

  it('starts it with flags it has, waits on /healthz, then runs the tests, and stops it always', () => {
    const start = steps[index((step) => step.run?.includes('node_modules/.bin/shipping-sandbox') === true)];
    const command = /shipping-sandbox([^>&\n]*)/.exec(start?.run ?? '')?.[1] ?? '';
    const flags = command.split(/\s+/).filter((arg) => arg.startsWith('--'));
    for (const flag of flags) expect(FLAGS, flag).toContain(flag);
    const wait = index((step) => step.run?.includes('http://127.0.0.1:4010/healthz') === true);
    const test = index((step) => step.run === 'npm test');
    expect(wait).toBeGreaterThan(index((step) => step === start));
    expect(test).toBeGreaterThan(wait);
    const stop = steps.find((step) => step.run?.startsWith('kill '));
    expect(stop).toMatchObject({ if: 'always()' });
  });

  it('gives the tests the URL, key and receiver a loopback sandbox has', () => {
    const parsed = parseCommandLine([], {});
    if (parsed.help) throw new Error('--help');
    const api = new URL(job?.env.SHIPPING_API_URL ?? '');
    expect([api.hostname, api.port, api.pathname]).toEqual([
      parsed.config.host,
      String(parsed.config.port),
      '/v1',
    ]);
    expect(job?.env.SHIPPING_API_KEY).toBe(DEFAULT_ACCOUNT.api_key.value);
    expect(webhookTargetsOf(parsed.config)).toBe('local');
    expect(new URL(job?.env.WEBHOOK_URL ?? '').hostname).toBe('127.0.0.1');
  });
});

// ---------------------------------------------------------------------------------------------
// The Testcontainers example

describe('the Testcontainers example', () => {
  const path = 'examples/testcontainers/sandbox.test.ts';
  const source = read(path);
  const file = ts.createSourceFile(path, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);

  /** Every call in the file of a method (or function) by that name. */
  const calls = (name: string): ts.CallExpression[] => {
    const found: ts.CallExpression[] = [];
    const visit = (node: ts.Node) => {
      if (ts.isCallExpression(node)) {
        const callee = node.expression;
        const called = ts.isPropertyAccessExpression(callee) ? callee.name.text : callee.getText();
        if (called === name) found.push(node);
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
    return found;
  };
  /** A constant's value: a literal, or the fallback of `process.env.X ?? 'literal'`. */
  const constantValue = (node: ts.Node | undefined): string | number | undefined => {
    if (node === undefined) return undefined;
    if (ts.isStringLiteralLike(node)) return node.text;
    if (ts.isNumericLiteral(node)) return Number(node.text);
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken)
      return constantValue(node.right);
    if (ts.isIdentifier(node)) {
      let value: string | number | undefined;
      const visit = (candidate: ts.Node) => {
        if (ts.isVariableDeclaration(candidate) && candidate.name.getText() === node.text)
          value = constantValue(candidate.initializer);
        ts.forEachChild(candidate, visit);
      };
      visit(file);
      return value;
    }
    return undefined;
  };
  const firstArgument = (name: string) => constantValue(calls(name)[0]?.arguments[0]);

  it('is TypeScript without syntax errors', () => {
    const { diagnostics = [] } = ts.transpileModule(source, {
      fileName: path,
      reportDiagnostics: true,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    expect(diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([]);
  });

  it('starts the image with GenericContainer and waits on /healthz at the HTTP port', () => {
    const created = (() => {
      let found: ts.NewExpression | undefined;
      const visit = (node: ts.Node) => {
        if (ts.isNewExpression(node) && node.expression.getText() === 'GenericContainer') found = node;
        ts.forEachChild(node, visit);
      };
      visit(file);
      return found;
    })();
    expect(constantValue(created?.arguments?.[0])).toBe(IMAGE_NAME);
    expect(firstArgument('withExposedPorts')).toBe(HTTP_PORT);
    const wait = calls('forHttp')[0];
    expect(wait?.expression.getText()).toBe('Wait.forHttp');
    expect(wait?.arguments.map(constantValue)).toEqual(['/healthz', HTTP_PORT]);
    expect(calls('getMappedPort').map((call) => constantValue(call.arguments[0]))).toContain(HTTP_PORT);
  });

  it('sets the sandbox through flags and variables it has, letting webhooks reach the test process', () => {
    const environment = calls('withEnvironment')[0]?.arguments[0];
    if (!environment || !ts.isObjectLiteralExpression(environment))
      throw new Error('no withEnvironment({...})');
    const env: Record<string, string> = {};
    for (const property of environment.properties) {
      if (!ts.isPropertyAssignment(property)) throw new Error(`not a plain property: ${property.getText()}`);
      env[property.name.getText()] = String(constantValue(property.initializer));
    }
    for (const name of Object.keys(env)) expect(VARIABLES, name).toContain(name);
    const command = calls('withCommand')[0]?.arguments[0];
    const argv =
      command && ts.isArrayLiteralExpression(command)
        ? command.elements.map((e) => String(constantValue(e)))
        : [];
    for (const flag of argv.filter((arg) => arg.startsWith('--'))) expect(FLAGS, flag).toContain(flag);

    const parsed = parseCommandLine(argv, { ...imageEnv, ...env });
    if (parsed.help) throw new Error('--help');
    expect(webhookTargetsOf(parsed.config)).toBe('public');
    expect(parsed.config.webhookAllowHosts).toEqual(['host.testcontainers.internal']);
    expect(parsed.config.allowHttpWebhooks).toBe(true);
    expect(calls('exposeHostPorts')).toHaveLength(1);
  });

  it('names testcontainers in a package.json of its own', () => {
    const pkg = JSON.parse(read('examples/testcontainers/package.json')) as {
      private: boolean;
      devDependencies: Record<string, string>;
    };
    expect(pkg.private).toBe(true);
    expect(Object.keys(pkg.devDependencies)).toEqual(expect.arrayContaining(['testcontainers', 'vitest']));
    // The sandbox itself does not depend on it.
    const root = JSON.parse(read('package.json')) as Record<string, Record<string, string> | undefined>;
    expect({ ...root.dependencies, ...root.devDependencies }).not.toHaveProperty('testcontainers');
  });
});
