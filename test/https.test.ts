import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Config, ConfigError, testConfig } from '../src/config/index.js';
import {
  certificateNames,
  generateLocalhostCertificate,
  LOOPBACK_NAMES,
  loadTlsMaterial,
} from '../src/http/https.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { capturingLogger, createTestSandbox, DEFAULT_KEY, expectError, type TestSandbox } from './helpers.js';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  json: any;
  /** SHA-256 fingerprint of the certificate the server presented (HTTPS only). */
  fingerprint?: string;
}

/**
 * One request over a real socket with node:http(s), which (unlike fetch) takes a CA per request.
 * `path` may be absolute-form (`https://host/…`) to test what the request line claims; `servername`
 * is the name the client asks for and verifies the certificate against, whatever address it dials.
 */
function send(
  url: string,
  options: {
    ca?: string | Buffer;
    headers?: Record<string, string>;
    path?: string;
    servername?: string;
  } = {},
): Promise<Answer> {
  const target = new URL(url);
  const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        headers: options.headers,
        ...(options.path ? { path: options.path } : {}),
        ...(options.ca ? { ca: options.ca } : {}),
        ...(options.servername ? { servername: options.servername } : {}),
        agent: false,
      },
      (res) => {
        const socket = res.socket as TLSSocket;
        const fingerprint = socket.encrypted ? socket.getPeerCertificate().fingerprint256 : undefined;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            json: /json/.test(res.headers['content-type'] ?? '') ? JSON.parse(text) : undefined,
            fingerprint,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const withKey = (headers: Record<string, string> = {}) => ({
  authorization: `Bearer ${DEFAULT_KEY}`,
  ...headers,
});

const tempDirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-https-'));
  tempDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

describe('the HTTPS listener with the certificate kept in the data directory', () => {
  let dataDir: string;
  let sandbox: RunningSandbox;
  let ca: Buffer;
  beforeAll(async () => {
    dataDir = tempDir();
    sandbox = await startServer(testConfig({ memory: false, dataDir }));
    ca = readFileSync(sandbox.certificatePath);
  });
  afterAll(() => sandbox.close());

  it('listens on a free port under the name localhost, and keeps the pair in <data dir>/tls', () => {
    expect(sandbox.httpsOrigin).toMatch(/^https:\/\/localhost:\d+$/);
    expect(sandbox.httpsOrigin).not.toMatch(/:0$/);
    expect(sandbox.certificatePath).toBe(join(dataDir, 'tls', 'cert.pem'));
    if (process.platform !== 'win32')
      expect(statSync(join(dataDir, 'tls', 'key.pem')).mode & 0o777).toBe(0o600);
  });

  it('makes a certificate for localhost, 127.0.0.1 and ::1', () => {
    const certificate = new X509Certificate(ca);
    expect(certificate.checkHost('localhost')).toBe('localhost');
    expect(certificate.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(certificate.checkIP('::1')).toBe('::1');
    expect(certificate.ca).toBe(false);
  });

  it('serves the API to a client that trusts the printed certificate', async () => {
    const health = await send(`${sandbox.httpsOrigin}/healthz`, { ca });
    expect(health).toMatchObject({ status: 200, json: { status: 'ok' } });
    const list = await send(`${sandbox.httpsOrigin}/v1/shipments`, { ca, headers: withKey() });
    expect(list.status).toBe(200);
    // The certificate also names the loopback address, so the IP form verifies too.
    const port = new URL(sandbox.httpsOrigin).port;
    expect((await send(`https://127.0.0.1:${port}/healthz`, { ca })).status).toBe(200);
  });

  it('fails verification for a client that does not trust it', async () => {
    await expect(send(`${sandbox.httpsOrigin}/healthz`)).rejects.toMatchObject({
      code: expect.stringMatching(/SELF_SIGNED|UNABLE_TO_VERIFY/),
    });
  });

  it('keeps plain HTTP working beside it by default', async () => {
    expect((await send(`${sandbox.origin}/v1/shipments`, { headers: withKey() })).status).toBe(200);
  });
});

describe('the kept certificate across starts', () => {
  it('is reused by the next start, and made again when deleted', async () => {
    const dataDir = tempDir();
    const config = testConfig({ memory: false, dataDir });
    const first = await startServer(config);
    const made = readFileSync(first.certificatePath);
    await first.close();

    const second = await startServer(config);
    expect(readFileSync(second.certificatePath)).toEqual(made);
    await second.close();

    rmSync(second.certificatePath);
    const third = await startServer(config);
    try {
      const remade = readFileSync(third.certificatePath);
      expect(remade).not.toEqual(made);
      const answer = await send(`${third.httpsOrigin}/healthz`, { ca: remade });
      expect(answer.fingerprint).toBe(new X509Certificate(remade).fingerprint256);
    } finally {
      await third.close();
    }
  });

  it('is made again when it has expired or is damaged', async () => {
    const dataDir = tempDir();
    const config = testConfig({ memory: false, dataDir });
    const made = await loadTlsMaterial(config);
    expect(made.source).toBe('generated');
    expect((await loadTlsMaterial(config)).source).toBe('kept');

    const afterExpiry = Date.parse(made.certificate.validTo) + 1000;
    const renewed = await loadTlsMaterial(config, undefined, afterExpiry);
    expect(renewed.source).toBe('generated');
    expect(Date.parse(renewed.certificate.validTo)).toBeGreaterThan(afterExpiry);

    writeFileSync(made.certificatePath, 'not a certificate');
    const repaired = await loadTlsMaterial(config);
    expect(repaired.source).toBe('generated');
    expect(readFileSync(repaired.certificatePath, 'utf8')).toBe(repaired.cert);
  });

  it('is kept in a per-user temporary folder with --memory, and reused by the next start', async () => {
    const first = await startServer(testConfig());
    const path = first.certificatePath;
    expect(path.startsWith(tmpdir())).toBe(true);
    const answer = await send(`${first.httpsOrigin}/healthz`, { ca: readFileSync(path) });
    expect(answer.status).toBe(200);
    const bytes = readFileSync(path, 'utf8');
    await first.close();
    const second = await startServer(testConfig());
    try {
      expect(second.certificatePath).toBe(path);
      expect(readFileSync(second.certificatePath, 'utf8')).toBe(bytes);
    } finally {
      await second.close();
    }
  });
});

describe('the names a made certificate covers', () => {
  /** The certificate's subjectAltName entries, as Node prints them (`DNS:x`, `IP Address:y`). */
  const entries = (certificate: X509Certificate) => certificate.subjectAltName?.split(', ') ?? [];
  // Whatever the machine is called (a CI runner's name may have capitals, or be localhost itself).
  const thisHost = hostname().toLowerCase();

  it('are the loopback names, this host name and the --tls-name ones, each once', () => {
    expect(certificateNames([])).toEqual([...new Set([...LOOPBACK_NAMES, thisHost])]);
    expect(certificateNames(['sandbox', '192.0.2.10', 'localhost', 'sandbox'], 'c0ffee123abc')).toEqual([
      'localhost',
      '127.0.0.1',
      '::1',
      'c0ffee123abc',
      'sandbox',
      '192.0.2.10',
    ]);
    // A host name that no certificate could carry is left out, not refused.
    expect(certificateNames([], 'My Laptop')).toEqual(LOOPBACK_NAMES);
    expect(certificateNames([], 'Build-Agent.Local')).toContain('build-agent.local');
  });

  it('go in as DNS names, and addresses as IP entries', async () => {
    const made = await loadTlsMaterial({
      memory: false,
      dataDir: tempDir(),
      tlsNames: ['sandbox', 'sandbox.ci.internal', '192.0.2.10', 'fd00::10'],
    });
    expect(made.source).toBe('generated');
    expect(entries(made.certificate).sort()).toEqual(
      [
        ...new Set(['DNS:localhost', `DNS:${thisHost}`]),
        'IP Address:127.0.0.1',
        'IP Address:0:0:0:0:0:0:0:1',
        'DNS:sandbox',
        'DNS:sandbox.ci.internal',
        'IP Address:192.0.2.10',
        'IP Address:FD00:0:0:0:0:0:0:10',
      ].sort(),
    );
    expect(made.certificate.checkHost('sandbox.ci.internal')).toBe('sandbox.ci.internal');
    expect(made.certificate.checkIP('192.0.2.10')).toBe('192.0.2.10');
    // An address is not a DNS name: a client that dials it checks the IP entry.
    expect(made.certificate.checkHost('192.0.2.10')).toBeUndefined();
    expect(made.certificate.checkHost('other.internal')).toBeUndefined();
  });

  it('verify over TLS for a client that asks for an added name or this host name', async () => {
    const sandbox = await startServer(
      testConfig({ memory: false, dataDir: tempDir(), tlsNames: ['sandbox.test'] }),
    );
    try {
      const ca = readFileSync(sandbox.certificatePath);
      // The client dials loopback, asks for the name, and verifies the certificate against it.
      const url = `https://127.0.0.1:${new URL(sandbox.httpsOrigin).port}/healthz`;
      expect((await send(url, { ca, servername: 'sandbox.test' })).status).toBe(200);
      expect((await send(url, { ca, servername: thisHost })).status).toBe(200);
      await expect(send(url, { ca, servername: 'other.test' })).rejects.toMatchObject({
        code: 'ERR_TLS_CERT_ALTNAME_INVALID',
      });
    } finally {
      await sandbox.close();
    }
  });

  it('replace a kept certificate that lacks a name now asked for, and keep one that has them', async () => {
    const dataDir = tempDir();
    const { logger, lines } = capturingLogger();
    const first = await loadTlsMaterial({ memory: false, dataDir });
    expect(first.certificate.checkHost('sandbox.test')).toBeUndefined();

    const widened = await loadTlsMaterial({ memory: false, dataDir, tlsNames: ['sandbox.test'] }, logger);
    expect(widened.source).toBe('generated');
    expect(widened.certificate.checkHost('sandbox.test')).toBe('sandbox.test');
    expect(readFileSync(widened.certificatePath, 'utf8')).toBe(widened.cert);
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: 'replacing the kept HTTPS certificate',
        reason: 'does not cover sandbox.test',
      }),
    );

    // Asking for the same names again, or for fewer, keeps it.
    const again = await loadTlsMaterial({ memory: false, dataDir, tlsNames: ['sandbox.test'] });
    expect([again.source, again.cert]).toEqual(['kept', widened.cert]);
    const fewer = await loadTlsMaterial({ memory: false, dataDir });
    expect([fewer.source, fewer.cert]).toEqual(['kept', widened.cert]);
  });

  it("keep a certificate made under another host name (a container's name is new at every run)", async () => {
    const dataDir = tempDir();
    const made = await loadTlsMaterial({ memory: false, dataDir });
    // As if made by an earlier container: only the loopback names.
    const earlier = await generateLocalhostCertificate(Date.now(), LOOPBACK_NAMES);
    writeFileSync(made.certificatePath, earlier.cert);
    writeFileSync(join(dataDir, 'tls', 'key.pem'), earlier.key);
    const kept = await loadTlsMaterial({ memory: false, dataDir });
    expect([kept.source, kept.cert]).toEqual(['kept', earlier.cert]);
  });
});

describe('a certificate given by --tls-cert and --tls-key', () => {
  let files: { cert: string; key: string; otherKey: string; dir: string };
  beforeAll(async () => {
    const dir = tempDir();
    const [pair, other] = await Promise.all([generateLocalhostCertificate(), generateLocalhostCertificate()]);
    files = {
      cert: join(dir, 'given.crt'),
      key: join(dir, 'given.key'),
      otherKey: join(dir, 'other.key'),
      dir,
    };
    writeFileSync(files.cert, pair.cert);
    writeFileSync(files.key, pair.key);
    writeFileSync(files.otherKey, other.key);
  });

  it('is served, and its path is the one printed', async () => {
    const sandbox = await startServer(testConfig({ tlsCert: files.cert, tlsKey: files.key }));
    try {
      expect(sandbox.certificatePath).toBe(files.cert);
      const ca = readFileSync(files.cert);
      const answer = await send(`${sandbox.httpsOrigin}/healthz`, { ca });
      expect(answer.fingerprint).toBe(new X509Certificate(ca).fingerprint256);
    } finally {
      await sandbox.close();
    }
  });

  it('is served as it is when it lacks a --tls-name, with a warning', async () => {
    const { logger, lines } = capturingLogger();
    const given = await loadTlsMaterial(
      { memory: true, dataDir: files.dir, tlsCert: files.cert, tlsKey: files.key, tlsNames: ['sandbox'] },
      logger,
    );
    expect(given.source).toBe('flags');
    expect(given.cert).toBe(readFileSync(files.cert, 'utf8'));
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: 'the --tls-cert certificate does not cover every --tls-name',
        missing: ['sandbox'],
      }),
    );
  });

  const refused = (overrides: Partial<Config>) => startServer(testConfig(overrides));

  it('refuses one without the other', async () => {
    await expect(refused({ tlsCert: files.cert })).rejects.toThrow(ConfigError);
    await expect(refused({ tlsCert: files.cert })).rejects.toThrow(
      '--tls-cert was given without --tls-key: the HTTPS listener needs both a certificate and its private key.',
    );
    await expect(refused({ tlsKey: files.key })).rejects.toThrow('--tls-key was given without --tls-cert');
  });

  it('refuses a missing file, a file that is not PEM, and a key of another certificate', async () => {
    const missing = join(files.dir, 'missing.pem');
    await expect(refused({ tlsCert: missing, tlsKey: files.key })).rejects.toThrow(
      `Cannot read --tls-cert ${missing}: no such file.`,
    );
    await expect(refused({ tlsCert: files.key, tlsKey: files.key })).rejects.toThrow(
      `--tls-cert ${files.key} is not a PEM certificate.`,
    );
    await expect(refused({ tlsCert: files.cert, tlsKey: files.cert })).rejects.toThrow(
      'is not an unencrypted PEM private key',
    );
    await expect(refused({ tlsCert: files.cert, tlsKey: files.otherKey })).rejects.toThrow(
      `--tls-key ${files.otherKey} is not the private key of the certificate --tls-cert ${files.cert}.`,
    );
  });
});

describe('strict HTTPS over real sockets', () => {
  let strict: RunningSandbox;
  let behindProxy: RunningSandbox;
  let ca: Buffer;
  beforeAll(async () => {
    [strict, behindProxy] = await Promise.all([
      startServer(testConfig({ strictHttps: true })),
      startServer(testConfig({ strictHttps: true, trustProxy: true })),
    ]);
    ca = readFileSync(strict.certificatePath);
  });
  afterAll(() => Promise.all([strict.close(), behindProxy.close()]));

  it('answers plain-HTTP API calls with 403 https_required, before authentication and routing', async () => {
    for (const [path, headers] of [
      ['/v1/shipments', withKey()],
      ['/v1/shipments', {}],
      ['/v1/no-such-route', withKey()],
      // The API reference's "Try it out" takes the same routes.
      ['/_sandbox/try/v1/shipments', withKey()],
    ] as const) {
      const answer = await send(`${strict.origin}${path}`, { headers });
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect({ status: answer.status, code: answer.json.error.code }).toEqual({
        status: 403,
        code: 'https_required',
      });
    }
  });

  it('serves the same call over HTTPS', async () => {
    const answer = await send(`${strict.httpsOrigin}/v1/shipments`, { ca, headers: withKey() });
    expect(answer.status).toBe(200);
  });

  it('leaves /healthz, /openapi.json, /docs and /_sandbox open over plain HTTP', async () => {
    expect((await send(`${strict.origin}/healthz`)).status).toBe(200);
    expect((await send(`${strict.origin}/openapi.json`)).status).toBe(200);
    expect((await send(`${strict.origin}/docs`)).status).toBe(200);
    expect((await send(`${strict.origin}/_sandbox/clock`, { headers: withKey() })).status).toBe(200);
  });

  it('does not believe an absolute-form request line that claims https', async () => {
    const port = new URL(strict.origin).port;
    const answer = await send(strict.origin, {
      path: `https://127.0.0.1:${port}/v1/shipments`,
      headers: withKey(),
    });
    expect(answer.status).toBe(403);
  });

  it('ignores X-Forwarded-Proto without --trust-proxy', async () => {
    const answer = await send(`${strict.origin}/v1/shipments`, {
      headers: withKey({ 'x-forwarded-proto': 'https' }),
    });
    expect(answer.status).toBe(403);
  });

  it('believes the first X-Forwarded-Proto value with --trust-proxy', async () => {
    const call = (proto: string) =>
      send(`${behindProxy.origin}/v1/shipments`, { headers: withKey({ 'x-forwarded-proto': proto }) });
    expect((await call('https')).status).toBe(200);
    expect((await call('HTTPS, http')).status).toBe(200);
    expect((await call('http')).status).toBe(403);
    expect((await call('http, https')).status).toBe(403);
    expect((await send(`${behindProxy.origin}/v1/shipments`, { headers: withKey() })).status).toBe(403);
  });

  it('reports the HTTPS port by its flag when it is taken', async () => {
    const port = Number(new URL(strict.httpsOrigin).port);
    await expect(startServer(testConfig({ httpsPort: port }))).rejects.toThrow(
      `HTTPS port ${port} on 127.0.0.1 is already in use (choose another with --https-port, or 0 for any free port)`,
    );
  });
});

describe('strict HTTPS in-process (app.request has no socket)', () => {
  let sandboxes: TestSandbox[] = [];
  afterEach(async () => {
    for (const s of sandboxes) await s.database.close();
    sandboxes = [];
  });
  const make = async (overrides: Partial<Config>) => {
    const sandbox = await createTestSandbox(overrides);
    sandboxes.push(sandbox);
    return sandbox;
  };

  it('counts a request without a socket as plain HTTP', async () => {
    expectError(
      await (await make({ strictHttps: true })).call('GET', '/v1/shipments'),
      403,
      'https_required',
    );
    expect((await (await make({})).call('GET', '/v1/shipments')).status).toBe(200);
  });

  it('takes X-Forwarded-Proto only with trustProxy', async () => {
    const headers = { 'x-forwarded-proto': 'https' };
    expect(
      (await (await make({ strictHttps: true, trustProxy: true })).call('GET', '/v1/shipments', { headers }))
        .status,
    ).toBe(200);
    expectError(
      await (await make({ strictHttps: true })).call('GET', '/v1/shipments', { headers }),
      403,
      'https_required',
    );
  });
});
