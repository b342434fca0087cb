/** Where a PostgreSQL URL's server is: a host, or the folder of its Unix socket on this machine. */
interface Server {
  host?: string;
  socketFolder?: string;
  port?: string;
}

/**
 * The server a postgres:// URL names, read as `pg` reads it (pg-connection-string): a `host` (and
 * `port`) in the query wins over the authority's; a host that is a folder (`/var/run/postgresql`,
 * or `%2Fvar%2Frun%2Fpostgresql` in the authority) is that of the server's Unix socket on this
 * machine; `user:password@/name` has no host but the query's. Undefined for a URL that names no
 * server, or is no postgres:// URL.
 */
export function serverOf(url: string): Server | undefined {
  const parsed = parse(url);
  if (!parsed) return undefined;
  const host = parsed.url.searchParams.get('host') || decoded(parsed.hostname);
  const port = parsed.url.searchParams.get('port') || parsed.url.port || undefined;
  if (!host) return undefined;
  return host.startsWith('/') ? { socketFolder: host, port } : { host, port };
}

/** The URL parsed, with its host apart: empty for `user:password@/name`, which WHATWG URLs refuse. */
function parse(url: string): { url: URL; hostname: string } | undefined {
  if (!/^postgres(ql)?:\/\//i.test(url)) return undefined;
  if (URL.canParse(url)) {
    const parsed = new URL(url);
    return { url: parsed, hostname: parsed.hostname };
  }
  const withPlaceholder = url.replace('@/', '@placeholder/');
  return URL.canParse(withPlaceholder) ? { url: new URL(withPlaceholder), hostname: '' } : undefined;
}

/** The URL without its password, for the banner and `/healthz`. */
export function describeUrl(url: string): string {
  const server = serverOf(url);
  const parsed = parse(url);
  if (!server || !parsed) return 'the database URL given';
  const database = decoded(parsed.url.pathname.replace(/^\//, '')) || 'postgres';
  const port = server.port ? `:${server.port}` : '';
  return server.socketFolder
    ? `${database} through the socket in ${server.socketFolder}${server.port ? ` (port ${server.port})` : ''}`
    : `${server.host}${port}/${database}`;
}

/** Percent-decoded text; as it is where it does not decode (a stray `%`). */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
