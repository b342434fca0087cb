import { renameSync, rmSync, writeFileSync } from 'node:fs';

/** What a started sandbox tells people and scripts. */
export interface ReadyInfo {
  origin: string;
  httpsOrigin: string;
  certificatePath: string;
  cdnUrl: string;
  /** `:memory:`, the database file, or the PostgreSQL database (`PostgreSQL, host:port/name`). */
  location: string;
  /** The engine that keeps the data. */
  engine: 'sqlite' | 'postgres';
  /**
   * The default account's key; none where the sandbox has no default account (it listens beyond
   * loopback, or has an admin token).
   */
  apiKey: string | undefined;
  /** Whether creating an account takes the admin token. */
  adminToken: boolean;
  strictHttps: boolean;
  version: string;
  /** This process's name among replicas over one database (`--replica-id`). */
  replica: string;
}

export const dashboardUrl = (origin: string, key: string | undefined) =>
  key === undefined ? `${origin}/dashboard` : `${origin}/dashboard#key=${key}`;

/** Where the data lives, in words: which engine, and where. */
function dataText({ engine, location }: ReadyInfo): string {
  if (engine === 'postgres') return location;
  return location === ':memory:' ? 'SQLite, in memory (lost at exit)' : `SQLite, ${location}`;
}

/** The banner a person reads on a terminal. */
export function bannerText(info: ReadyInfo): string {
  const { origin, httpsOrigin } = info;
  // Without a default account, the commands name the key of an account the reader makes.
  const key = info.apiKey ?? '$KEY';
  const cert = shellQuote(info.certificatePath);
  const account =
    info.apiKey === undefined
      ? [
          '  Accounts   no default account: it exists only on a loopback address without --admin-token.',
          `             Make one: curl -X POST${info.adminToken ? ' -H "Authorization: Bearer $SANDBOX_ADMIN_TOKEN"' : ''} ${origin}/_sandbox/accounts`,
          '             and set KEY to its api_key.',
        ]
      : [`  Test key   ${info.apiKey}`];
  return [
    `Shipping Sandbox ${info.version} is ready.`,
    `  API        ${origin}/v1${info.strictHttps ? '   (strict HTTPS: answers 403 https_required)' : ''}`,
    `  HTTPS      ${httpsOrigin}/v1`,
    `  Cert       ${info.certificatePath}`,
    `  CDN        ${info.cdnUrl}`,
    `  Docs       ${origin}/docs   (OpenAPI: ${origin}/openapi.json)`,
    `  Dashboard  ${dashboardUrl(origin, info.apiKey)}`,
    `  Data       ${dataText(info)}`,
    ...account,
    '',
    ...(info.strictHttps ? [] : [`  curl -H "Authorization: Bearer ${key}" ${origin}/v1/shipments`]),
    `  curl --cacert ${cert} -H "Authorization: Bearer ${key}" ${httpsOrigin}/v1/shipments`,
    `  Node clients trust the certificate with NODE_EXTRA_CA_CERTS=${cert}`,
    '  Control it from another terminal: shipping-sandbox --help',
    '',
  ].join('\n');
}

/**
 * The line a script waits for when stdout is not a terminal: one JSON object, on one line, once
 * both ports are bound. The log's JSON lines share the stream; this one is told apart by `ready`.
 */
export function readyLine(info: ReadyInfo): string {
  return `${JSON.stringify({
    ready: true,
    version: info.version,
    origin: info.origin,
    url: `${info.origin}/v1`,
    httpsOrigin: info.httpsOrigin,
    httpsUrl: `${info.httpsOrigin}/v1`,
    certificatePath: info.certificatePath,
    cdnUrl: info.cdnUrl,
    data: info.location,
    database: info.engine,
    apiKey: info.apiKey ?? null,
    dashboardUrl: dashboardUrl(info.origin, info.apiKey),
    docsUrl: `${info.origin}/docs`,
    pid: process.pid,
    replica: info.replica,
  })}\n`;
}

/** What `--port-file` holds. */
export interface PortFile {
  port: number;
  httpsPort: number;
  origin: string;
}

export function portFileOf(origin: string, httpsOrigin: string): PortFile {
  return { port: Number(new URL(origin).port), httpsPort: Number(new URL(httpsOrigin).port), origin };
}

/**
 * Writes the port file under a temporary name and renames it into place: a script that polls for
 * the file never reads half of it.
 */
export function writePortFile(path: string, content: PortFile): void {
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, `${JSON.stringify(content)}\n`);
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

/** At a clean stop the file goes, so a script waiting for the next start does not read this one. */
export function removePortFile(path: string): void {
  rmSync(path, { force: true });
}

/** A path as a POSIX shell word, so the printed commands can be pasted as they are. */
function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}
