import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { makeDirectories } from '../core/directories.js';
import { ConfigError } from '../core/errors.js';
import { ipVersion, selfSignedCertificate } from './certificate.js';

/** Where the certificate comes from: the flags' pair, or the one kept for this data directory. */
export interface TlsOptions {
  tlsCert?: string | undefined;
  tlsKey?: string | undefined;
  memory: boolean;
  dataDir: string;
  /**
   * `--tls-name`: host names and addresses a made certificate covers besides the loopback ones and
   * this host's name, such as the Compose service name a container is reached by.
   */
  tlsNames?: readonly string[] | undefined;
}

/** The certificate and key the HTTPS listener serves, and where a client finds the certificate to trust. */
export interface TlsMaterial {
  cert: string;
  key: string;
  /** Absolute path of the PEM certificate: what the banner tells clients to trust. */
  certificatePath: string;
  certificate: X509Certificate;
  /** How the material came about, for the log line. */
  source: 'flags' | 'kept' | 'generated';
  /** Removes what was made only for this process (the temporary directory of `--memory`). */
  dispose(): void;
}

export const TLS_DIRECTORY = 'tls';
export const CERT_FILE = 'cert.pem';
export const KEY_FILE = 'key.pem';

/** Apple's platforms refuse TLS server certificates valid for longer, even when the user trusts them. */
const VALIDITY_DAYS = 825;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Finds the HTTPS certificate: the pair given by `--tls-cert`/`--tls-key`, else the one kept in
 * `<data dir>/tls/` (with `--memory`, in a per-user temporary folder), made on first start.
 */
export async function loadTlsMaterial(
  config: TlsOptions,
  logger?: Logger,
  now: number = Date.now(),
): Promise<TlsMaterial> {
  const names = config.tlsNames ?? [];
  if (config.tlsCert !== undefined || config.tlsKey !== undefined)
    return fromFlags(config, names, now, logger);
  // `--memory` keeps no sandbox state, but a localhost certificate is not state: it is kept in a
  // per-user temporary folder, so in-memory starts (CI runs one per job) skip making one, and a
  // client trusts the same file run after run.
  const dir = config.memory ? memoryModeCertificateDir() : resolve(config.dataDir, TLS_DIRECTORY);
  return keptInDataDir(dir, names, now, logger);
}

/** The names every made certificate covers, whatever `--tls-name` adds. */
export const LOOPBACK_NAMES: readonly string[] = ['localhost', '127.0.0.1', '::1'];

/**
 * The names a made certificate covers: the loopback ones, this host's name (in a container, its id,
 * or what Compose's `hostname:` or `docker run --hostname` set), then the names asked for, each
 * once. A host name that could not be a DNS name is left out rather than refused: it is only a
 * convenience.
 */
export function certificateNames(asked: readonly string[], hostName: string = hostname()): string[] {
  const host = hostName.trim().toLowerCase();
  const names = [...LOOPBACK_NAMES, ...(DNS_NAME.test(host) ? [host] : []), ...asked];
  return [...new Set(names.map((name) => name.toLowerCase()))];
}

const DNS_NAME =
  /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** The names of `names` that the certificate is not valid for. */
export function namesNotCovered(certificate: X509Certificate, names: readonly string[]): string[] {
  return names.filter((name) =>
    ipVersion(name) === 0
      ? certificate.checkHost(name) === undefined
      : certificate.checkIP(name) === undefined,
  );
}

export function memoryModeCertificateDir(): string {
  return join(tmpdir(), `shipping-sandbox-tls-${process.getuid?.() ?? 'user'}`);
}

function fromFlags(
  config: Pick<TlsOptions, 'tlsCert' | 'tlsKey'>,
  names: readonly string[],
  now: number,
  logger: Logger | undefined,
): TlsMaterial {
  const { tlsCert, tlsKey } = config;
  if (tlsCert === undefined || tlsKey === undefined) {
    const [given, missing] =
      tlsCert === undefined ? ['--tls-key', '--tls-cert'] : ['--tls-cert', '--tls-key'];
    throw new ConfigError(
      `${given} was given without ${missing}: the HTTPS listener needs both a certificate and its private key.`,
    );
  }
  const certificatePath = resolve(tlsCert);
  const cert = readPem(certificatePath, '--tls-cert');
  const key = readPem(resolve(tlsKey), '--tls-key');
  const checked = checkPair(cert, key);
  if ('problem' in checked) {
    const names = { cert: `--tls-cert ${tlsCert}`, key: `--tls-key ${tlsKey}` };
    throw new ConfigError(`${checked.problem(names)}.`);
  }
  const { certificate } = checked;
  // A given certificate is the user's choice: an expired one is served as it is, with a warning.
  if (Date.parse(certificate.validTo) <= now)
    logger?.warn({ certificatePath, validTo: certificate.validTo }, 'the --tls-cert certificate has expired');
  // So is one that lacks a --tls-name: clients that use that name will fail to verify it.
  const missing = namesNotCovered(certificate, names);
  if (missing.length > 0)
    logger?.warn({ certificatePath, missing }, 'the --tls-cert certificate does not cover every --tls-name');
  return { cert, key, certificatePath, certificate, source: 'flags', dispose() {} };
}

function readPem(path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (error as Error).message;
    throw new ConfigError(`Cannot read ${flag} ${path}: ${reason}.`);
  }
}

type Names = { cert: string; key: string };

/** The parsed certificate when the pair is usable, else what is wrong in words that name the files. */
function checkPair(
  cert: string,
  key: string,
): { certificate: X509Certificate } | { problem: (names: Names) => string } {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch {
    return { problem: (n) => `${n.cert} is not a PEM certificate` };
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    return { problem: (n) => `${n.key} is not an unencrypted PEM private key` };
  }
  if (!certificate.checkPrivateKey(privateKey))
    return { problem: (n) => `${n.key} is not the private key of the certificate ${n.cert}` };
  return { certificate };
}

async function keptInDataDir(
  dir: string,
  asked: readonly string[],
  now: number,
  logger: Logger | undefined,
): Promise<TlsMaterial> {
  const certificatePath = join(dir, CERT_FILE);
  const keyPath = join(dir, KEY_FILE);
  if (existsSync(certificatePath) && existsSync(keyPath)) {
    // Unreadable files are not ours to replace (wrong owner, say): stop rather than overwrite.
    const cert = readKept(certificatePath);
    const key = readKept(keyPath);
    const checked = checkPair(cert, key);
    // This host's name is not required of a kept certificate, only of a made one: a container's name
    // is its id, new at every `docker run`, and replacing the kept pair at every start would undo
    // the trust of every client given that file.
    const missing =
      'certificate' in checked ? namesNotCovered(checked.certificate, [...LOOPBACK_NAMES, ...asked]) : [];
    if (
      'certificate' in checked &&
      Date.parse(checked.certificate.validTo) > now + DAY_MS &&
      missing.length === 0
    )
      return { cert, key, certificatePath, certificate: checked.certificate, source: 'kept', dispose() {} };
    // Expired, about to expire, damaged (a crash between the two renames), or not valid for a name now
    // asked for: the directory is the sandbox's own, and a fresh pair is what anyone would do by hand.
    const reason =
      'problem' in checked
        ? checked.problem({ cert: CERT_FILE, key: KEY_FILE })
        : missing.length > 0
          ? `does not cover ${missing.join(', ')}`
          : `expires ${checked.certificate.validTo}`;
    logger?.warn({ certificatePath, reason }, 'replacing the kept HTTPS certificate');
  }
  try {
    makeDirectories(dir);
  } catch (error) {
    throw new Error(`Cannot keep the HTTPS certificate: ${(error as Error).message}`);
  }
  return { ...(await generateInto(dir, certificateNames(asked), now)), dispose() {} };
}

function readKept(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(
      `Cannot read the kept HTTPS certificate file ${path}: ${(error as Error).message}. ` +
        'Fix its permissions or delete it to have a new certificate made.',
    );
  }
}

/** Makes a self-signed pair for `names` and writes it to `dir`: the key readable by its owner only. */
async function generateInto(
  dir: string,
  names: readonly string[],
  now: number,
): Promise<Omit<TlsMaterial, 'dispose'>> {
  const { cert, key } = await generateLocalhostCertificate(now, names);
  const certificatePath = join(dir, CERT_FILE);
  const keyPath = join(dir, KEY_FILE);
  // Through temporary names, so another process starting on the same directory never reads half a
  // file; a leftover of a crash is removed first because `mode` only applies to a new file.
  for (const [path, text, mode] of [
    [keyPath, key, 0o600],
    [certificatePath, cert, 0o644],
  ] as const) {
    rmSync(`${path}.tmp`, { force: true });
    writeFileSync(`${path}.tmp`, text, { mode });
  }
  renameSync(`${keyPath}.tmp`, keyPath);
  renameSync(`${certificatePath}.tmp`, certificatePath);
  return { cert, key, certificatePath, certificate: new X509Certificate(cert), source: 'generated' };
}

/**
 * A self-signed certificate for `names` (by default `localhost`, `127.0.0.1` and `::1`), addresses as
 * IP entries and the rest as DNS names. P-256 keys take a fraction of a millisecond to make, where RSA
 * takes a quarter of a second. It is an end-entity certificate (not a CA): Firefox refuses a CA
 * certificate as a server's, and every client accepts a self-signed leaf as its own trust anchor. The
 * validity starts a day back so a client whose clock lags still accepts it.
 */
export async function generateLocalhostCertificate(
  now: number = Date.now(),
  names: readonly string[] = LOOPBACK_NAMES,
): Promise<{ cert: string; key: string }> {
  return selfSignedCertificate({
    commonName: 'localhost',
    organization: 'Shipping Sandbox',
    names,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + VALIDITY_DAYS * DAY_MS),
  });
}

const WILDCARD = new Set(['0.0.0.0', '::']);

/**
 * The host name of the HTTPS origin the banner prints: one the certificate is valid for, or TLS
 * verification fails however the client trusts it. On a loopback or wildcard address that is
 * `localhost` (what the generated certificate and tools such as mkcert name), else the address itself.
 */
export function httpsOriginHost(boundAddress: string, certificate: X509Certificate): string {
  const local = WILDCARD.has(boundAddress) || boundAddress === '::1' || boundAddress.startsWith('127.');
  const address = WILDCARD.has(boundAddress) ? '127.0.0.1' : boundAddress;
  if (local && certificate.checkHost('localhost') !== undefined) return 'localhost';
  if (ipVersion(address) !== 0 && certificate.checkIP(address) !== undefined) return hostOf(address);
  // A given certificate for another name (sandbox.test, say): the client must reach it by that name.
  const dnsName = /(?:^|, )DNS:([^,*\s]+)/.exec(certificate.subjectAltName ?? '')?.[1];
  return dnsName ?? hostOf(address);
}

const hostOf = (address: string): string => (ipVersion(address) === 6 ? `[${address}]` : address);
