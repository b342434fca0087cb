import { readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { type Config, parseCommandLine, webhookTargetsOf } from '../src/config/index.js';
import { HEALTH_TIMEOUT_MS } from '../src/http/openapi.js';
import { HEARTBEAT_MS } from '../src/journal/stream-routes.js';
import {
  FLAGS,
  freePort,
  IMAGE_ENV,
  IMAGE_NAME,
  onPort,
  ROOT,
  read,
  runCheck,
  type Service,
  VARIABLES,
} from './container-files.js';

/**
 * examples/replicas, checked without a Docker engine or a cluster: the Compose file, HAProxy's config and
 * the Kubernetes manifests are parsed, and every flag, variable, port, path, label and Secret key they name
 * must be one the sandbox (or the neighbouring file) really has. The liveness probe's command runs
 * against real HTTP answers.
 */

const DIR = 'examples/replicas';
const SANDBOX_PORT = Number(IMAGE_ENV.PORT);
const REPLICAS = ['sandbox-1', 'sandbox-2', 'sandbox-3'];

/** The settings of a container of the image given these flags and variables, as the sandbox reads them. */
function settingsOf(argv: string[], env: Record<string, string>): Config {
  for (const flag of argv.filter((arg) => arg.startsWith('--'))) expect(FLAGS, flag).toContain(flag);
  for (const name of Object.keys(env)) expect(VARIABLES, name).toContain(name);
  const parsed = parseCommandLine(argv, { ...IMAGE_ENV, ...env });
  if (parsed.help) throw new Error('--help');
  return parsed.config;
}

/** Seconds of a Compose or HAProxy duration (`20s`, `5m`). */
function seconds(duration: string): number {
  const [, amount = '', unit = 's'] = /^(\d+)(ms|s|m|h)?$/.exec(duration) ?? [];
  if (amount === '') throw new Error(`${duration}: not a duration`);
  return Number(amount) * { ms: 0.001, s: 1, m: 60, h: 3600 }[unit as 'ms' | 's' | 'm' | 'h'];
}

// ---------------------------------------------------------------------------------------------
// Compose and HAProxy

/** Compose's interpolation of `${NAME}`, `${NAME:-default}` and `${NAME:?error}`. */
function interpolate(text: string, env: Record<string, string>): string {
  return text.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, how?: string, rest = '') => {
    const value = env[name];
    if (value !== undefined && value !== '') return value;
    if (how === '?') throw new Error(`${name}: ${rest}`);
    return how === '-' ? rest : '';
  });
}

/** HAProxy's config: each section (`backend sandboxes`) with its directives, comments dropped. */
function parseHaproxy(text: string): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  let current: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/(^|\s)#.*$/, '').trimEnd();
    if (line.trim() === '') continue;
    if (/^\S/.test(line)) {
      current = [];
      sections.set(line.trim(), current);
    } else current.push(line.trim().replace(/\s+/g, ' '));
  }
  return sections;
}

describe('the replicas Compose example', () => {
  const text = read(`${DIR}/compose.yaml`);
  const compose = parseYaml(text, { merge: true }) as {
    services: Record<string, Service & { read_only?: boolean; tmpfs?: string[]; stop_grace_period?: string }>;
    volumes: Record<string, unknown>;
  };
  const services = compose.services;
  const postgres = services.postgres ?? {};
  const balancer = services.balancer ?? {};
  const token = 'an-admin-token-from-the-shell';
  /** A replica's settings, with the shell's variables as `docker compose up` would read them. */
  const replica = (name: string, shell: Record<string, string> = { SANDBOX_ADMIN_TOKEN: token }) => {
    const service = services[name] ?? {};
    const env = Object.fromEntries(
      Object.entries(service.environment ?? {}).map(([key, value]) => [
        key,
        interpolate(String(value), shell),
      ]),
    );
    return settingsOf(service.command ?? [], env);
  };
  const haproxy = parseHaproxy(read(`${DIR}/haproxy.cfg`));
  const backend = haproxy.get('backend sandboxes') ?? [];
  const frontend = haproxy.get('frontend sandbox') ?? [];
  const defaults = haproxy.get('defaults') ?? [];

  it('runs three replicas of the image over the postgres service, once it is healthy', () => {
    expect(Object.keys(services).sort()).toEqual(['balancer', 'postgres', ...REPLICAS]);
    expect(postgres.image).toMatch(/^postgres:\d+/);
    expect(postgres.healthcheck?.test).toEqual(['CMD', 'pg_isready', '-U', 'sandbox', '-d', 'sandbox']);
    const [volume, path] = postgres.volumes?.[0]?.split(':') ?? [];
    expect(Object.keys(compose.volumes)).toContain(volume);
    expect(path).toBe('/var/lib/postgresql/data');
    for (const name of REPLICAS) {
      const service = services[name] ?? {};
      expect(service.image).toBe(IMAGE_NAME);
      expect(resolve(ROOT, DIR, service.build?.context ?? '')).toBe(ROOT);
      expect(service.depends_on?.postgres?.condition).toBe('service_healthy');
      // The image's own health check (GET /healthz) is what tells Compose a replica is up.
      expect(service.healthcheck).toBeUndefined();
      const url = new URL(replica(name).database ?? '');
      const env = postgres.environment ?? {};
      expect([url.protocol, url.hostname, url.port]).toEqual(['postgres:', 'postgres', '5432']);
      expect([url.username, url.password, url.pathname.slice(1)]).toEqual([
        env.POSTGRES_USER,
        env.POSTGRES_PASSWORD,
        env.POSTGRES_DB,
      ]);
    }
  });

  it('names each replica, shares one admin token from the shell, and refuses to start without it', () => {
    expect(REPLICAS.map((name) => replica(name).replicaId)).toEqual(REPLICAS);
    for (const name of REPLICAS) {
      const config = replica(name);
      expect(config.adminToken).toBe(token);
      expect(webhookTargetsOf(config)).toBe('public');
      expect(config.trustProxy).toBe(true);
      expect(config.logFormat).toBe('json');
    }
    expect(() => replica('sandbox-1', {})).toThrow(/SANDBOX_ADMIN_TOKEN: export SANDBOX_ADMIN_TOKEN first/);
  });

  it('writes only to tmpfs mounts over a read-only root: the data directory and the port file', () => {
    for (const name of REPLICAS) {
      const service = services[name] ?? {};
      expect(service.read_only).toBe(true);
      expect(service.tmpfs).toEqual(
        expect.arrayContaining([IMAGE_ENV.SANDBOX_DATA_DIR, dirname(IMAGE_ENV.SANDBOX_PORT_FILE ?? '')]),
      );
    }
  });

  it('gives a replica time to finish its sends after SIGTERM before Docker kills it', () => {
    for (const name of REPLICAS) {
      const grace = seconds(services[name]?.stop_grace_period ?? '10s');
      // The sandbox waits --shutdown-timeout for sends, then up to a second for requests.
      expect(grace).toBeGreaterThan(replica(name).shutdownTimeoutMs / 1000 + 1);
    }
  });

  it('signs label URLs for the balancer, the address clients fetch them from', () => {
    const [published = ''] = balancer.ports ?? [];
    const [hostPort, containerPort] = published.split(':');
    expect(frontend).toContain(`bind :${containerPort}`);
    expect(replica('sandbox-1').cdnUrl).toBe(`http://localhost:${hostPort}/cdn`);
    const behindTls = replica('sandbox-1', {
      SANDBOX_ADMIN_TOKEN: token,
      SANDBOX_PUBLIC_URL: 'https://sandbox.example.com',
    });
    expect(behindTls.cdnUrl).toBe('https://sandbox.example.com/cdn');
  });

  it('balances round-robin over the three replicas, with no affinity, checking each on /healthz', () => {
    expect(balancer.image).toMatch(/^haproxy:\d/);
    expect(balancer.volumes).toContain('./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro');
    for (const name of REPLICAS) expect(balancer.depends_on?.[name]?.condition).toBe('service_healthy');
    expect(frontend).toContain('default_backend sandboxes');
    expect(backend).toContain('balance roundrobin');
    expect(backend).toContain('option httpchk');
    expect(backend).toContain('http-check send meth GET uri /healthz');
    expect(backend).toContain('http-check expect status 200');
    expect(backend.filter((line) => line.startsWith('server '))).toEqual(
      REPLICAS.map((name) => `server ${name} ${name}:${SANDBOX_PORT}`),
    );
    expect(backend.find((line) => line.startsWith('default-server '))).toMatch(/(^| )check( |$)/);
    const sticky = /^(cookie|stick|stick-table|hash-type)\b|^balance (source|uri|hdr|url_param)/;
    expect([...haproxy.values()].flat().filter((line) => sticky.test(line))).toEqual([]);
  });

  it('keeps server-sent-event streams open well past their heartbeat', () => {
    const timeout = (name: string) =>
      seconds(defaults.find((line) => line.startsWith(`timeout ${name} `))?.split(' ')[2] ?? '0s');
    for (const side of ['client', 'server'])
      expect(timeout(side)).toBeGreaterThanOrEqual((4 * HEARTBEAT_MS) / 1000);
    // `option http-buffer-request` would hold requests back; nothing buffers answers.
    expect([...haproxy.values()].flat()).not.toContain('option http-buffer-request');
  });

  it("fits the balancer's connections to a replica in one client's share", () => {
    const maxconn = Number(
      /maxconn (\d+)/.exec(backend.find((l) => l.startsWith('default-server ')) ?? '')?.[1],
    );
    expect(maxconn).toBeGreaterThan(0);
    expect(replica('sandbox-1').maxConnectionsPerClient).toBeGreaterThanOrEqual(maxconn);
    expect(replica('sandbox-1').maxConnections).toBeGreaterThanOrEqual(maxconn);
  });
});

// ---------------------------------------------------------------------------------------------
// Kubernetes

type Labels = Record<string, string>;
type Probe = {
  httpGet?: { path: string; port: string | number };
  exec?: { command: string[] };
  periodSeconds: number;
  timeoutSeconds: number;
  failureThreshold: number;
};
type EnvVar = {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
};
type Container = {
  image: string;
  args?: string[];
  ports: { name: string; containerPort: number }[];
  env: EnvVar[];
  startupProbe: Probe;
  readinessProbe: Probe;
  livenessProbe: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  securityContext: Record<string, unknown>;
  volumeMounts: { name: string; mountPath: string }[];
};
type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Labels; annotations?: Record<string, string> };
  // Each kind's spec, read as the checks below need it.
  spec: any;
  stringData?: Record<string, string>;
  resources?: string[];
};

describe('the replicas Kubernetes manifests', () => {
  const k8s = `${DIR}/k8s`;
  const files = readdirSync(join(ROOT, k8s)).filter((file) => file.endsWith('.yaml'));
  const manifests = files.flatMap((file) =>
    parseAllDocuments(read(`${k8s}/${file}`)).map((document) => {
      expect(document.errors, file).toEqual([]);
      return document.toJS() as Manifest;
    }),
  );
  const one = (kind: string): Manifest => {
    const found = manifests.filter((manifest) => manifest.kind === kind);
    expect(found, kind).toHaveLength(1);
    return found[0] as Manifest;
  };
  const deployment = one('Deployment');
  const service = one('Service');
  const pdb = one('PodDisruptionBudget');
  const secret = one('Secret');
  const ingress = one('Ingress');
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0] as Container;
  const podLabels = deployment.spec.template.metadata.labels as Labels;
  const POD_NAME = 'shipping-sandbox-6d4cf56db6-x7k2p';

  /** The container's variables as the pod gets them: Secret keys read, the pod's name filled in. */
  const containerEnv = () =>
    Object.fromEntries(
      container.env.map(({ name, value, valueFrom }) => {
        if (value !== undefined) return [name, value];
        const ref = valueFrom?.secretKeyRef;
        if (ref) {
          expect(ref.name).toBe(secret.metadata.name);
          expect(Object.keys(secret.stringData ?? {}), name).toContain(ref.key);
          return [name, secret.stringData?.[ref.key] ?? ''];
        }
        expect(valueFrom?.fieldRef?.fieldPath).toBe('metadata.name');
        return [name, POD_NAME];
      }),
    );
  const settings = () => settingsOf(container.args ?? [], containerEnv());
  const selects = (selector: Labels) =>
    Object.entries(selector).every(([key, value]) => podLabels[key] === value) &&
    Object.keys(selector).length > 0;

  it('applies every manifest of the folder through its kustomization', () => {
    const kustomization = one('Kustomization');
    expect([...(kustomization.resources ?? [])].sort()).toEqual(
      files.filter((file) => file !== 'kustomization.yaml').sort(),
    );
  });

  it('runs three replicas of the image over the database URL of the Secret, named after their pods', () => {
    expect(deployment.spec.replicas).toBe(3);
    expect(selects(deployment.spec.selector.matchLabels)).toBe(true);
    expect(container.image).toMatch(new RegExp(`/${IMAGE_NAME}:[\\w.-]+$`));
    const config = settings();
    expect(new URL(config.database ?? '').protocol).toBe('postgres:');
    expect(config.adminToken).toBe(secret.stringData?.['admin-token']);
    expect(config.replicaId).toBe(POD_NAME);
    expect(webhookTargetsOf(config)).toBe('public');
    expect(config.trustProxy).toBe(true);
    // Nothing secret in the manifest itself.
    for (const name of ['DATABASE_URL', 'SANDBOX_ADMIN_TOKEN'])
      expect(container.env.find((v) => v.name === name)?.valueFrom?.secretKeyRef).toBeDefined();
  });

  it("listens on the image's port, which the probes, the Service and the Ingress name", () => {
    expect(container.ports).toEqual([{ name: 'http', containerPort: SANDBOX_PORT }]);
    expect(settings().port).toBe(SANDBOX_PORT);
    for (const probe of [container.startupProbe, container.readinessProbe])
      expect(probe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(selects(service.spec.selector)).toBe(true);
    expect(service.spec.sessionAffinity).toBe('None');
    const [servicePort] = service.spec.ports;
    expect(servicePort.targetPort).toBe('http');
    const [rule] = ingress.spec.rules;
    const backend = rule.http.paths[0].backend.service;
    expect(backend).toEqual({ name: service.metadata.name, port: { name: servicePort.name } });
    expect(ingress.spec.tls[0].hosts).toEqual([rule.host]);
    expect(settings().cdnUrl).toBe(`https://${rule.host}/cdn`);
    expect(ingress.metadata.annotations?.['nginx.ingress.kubernetes.io/proxy-buffering']).toBe('off');
    const readTimeout = Number(
      ingress.metadata.annotations?.['nginx.ingress.kubernetes.io/proxy-read-timeout'],
    );
    expect(readTimeout).toBeGreaterThanOrEqual((4 * HEARTBEAT_MS) / 1000);
  });

  it('takes a pod out of rotation well before liveness would restart it', () => {
    const { readinessProbe: ready, livenessProbe: live } = container;
    const window = (probe: Probe) => probe.periodSeconds * probe.failureThreshold;
    expect(window(ready)).toBeLessThanOrEqual(15);
    expect(window(live)).toBeGreaterThanOrEqual(3 * window(ready));
    // /healthz gives up on the database after HEALTH_TIMEOUT_MS and answers 503: liveness must wait for
    // that answer (a sandbox waiting on its database is alive), and the probe for its command.
    const waits = Number(/AbortSignal\.timeout\((\d+)\)/.exec(live.exec?.command.join(' ') ?? '')?.[1]);
    expect(waits).toBeGreaterThan(HEALTH_TIMEOUT_MS);
    expect(live.timeoutSeconds * 1000).toBeGreaterThan(waits);
    for (const probe of [container.startupProbe, ready])
      expect(probe.timeoutSeconds * 1000).toBeGreaterThan(HEALTH_TIMEOUT_MS);
  });

  it('gives SIGTERM time for the preStop pause and the graceful stop before SIGKILL', () => {
    const preStop = container.lifecycle?.preStop?.exec?.command ?? [];
    expect(preStop[0]).toBe('sleep');
    const stop = Number(preStop[1]) + settings().shutdownTimeoutMs / 1000 + 1;
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(stop);
  });

  it("runs as the image's unprivileged user on a read-only root, writing only to its two volumes", () => {
    expect(read('Dockerfile')).toMatch(/^USER node$/m);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, fsGroup: 1000 });
    expect(container.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    const volumes = (pod.volumes as { name: string; emptyDir?: unknown }[]).map((v) => v.name);
    expect(container.volumeMounts.map((m) => m.name).sort()).toEqual([...volumes].sort());
    expect(container.volumeMounts.map((m) => m.mountPath).sort()).toEqual(
      [IMAGE_ENV.SANDBOX_DATA_DIR, dirname(IMAGE_ENV.SANDBOX_PORT_FILE ?? '')].sort(),
    );
    expect(container.resources.requests).toMatchObject({
      cpu: expect.any(String),
      memory: expect.any(String),
    });
    expect(container.resources.limits.memory).toEqual(expect.any(String));
  });

  it('lets a disruption take one replica at a time', () => {
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(selects(pdb.spec.selector.matchLabels)).toBe(true);
    expect(pdb.spec.maxUnavailable === 1 || pdb.spec.minAvailable === 2).toBe(true);
    expect(deployment.spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
  });

  describe('the liveness command', () => {
    // A stand-in for /healthz that answers whatever status a check sets: 503 is a sandbox without its
    // database, which must stay alive.
    let status = 200;
    let server: Server;
    let port: number;
    beforeAll(async () => {
      server = createServer((request, response) => {
        response.statusCode = request.url === '/healthz' ? status : 404;
        response.end();
      });
      await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise((closed) => server.close(closed)));

    const command = () => {
      const exec = container.livenessProbe.exec?.command ?? [];
      expect(exec.join(' ')).toContain(`http://127.0.0.1:${SANDBOX_PORT}/healthz`);
      return exec;
    };
    const live = (to: number) => runCheck(command().map((part) => onPort(part, SANDBOX_PORT, to)));

    it('passes while /healthz answers, 200 or 503, and fails on any other answer or none', async () => {
      status = 200;
      expect(await live(port)).toBe(0);
      status = 503;
      expect(await live(port)).toBe(0);
      status = 500;
      expect(await live(port)).toBe(1);
      expect(await live(await freePort())).toBe(1);
    });
  });
});
