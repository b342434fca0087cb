/** Where a PostgreSQL URL's server is: a host, or the folder of its Unix socket on this machine. */
interface Server {
  host?: string;
  socketFolder?: string;
  port?: string;
}

/**
 * The server a postgres:// URL names: its host, or, for a server on this machine reached through its
 * Unix socket (`postgresql:///name?host=/var/run/postgresql`, as libpq and pg write it), the socket's
 * folder. Undefined for a URL that names neither, or is no postgres:// URL.
 */
export function serverOf(url: string): Server | undefined {
  if (!/^postgres(ql)?:\/\//i.test(url) || !URL.canParse(url)) return undefined;
  const parsed = new URL(url);
  const port = parsed.port || parsed.searchParams.get('port') || undefined;
  const query = parsed.searchParams.get('host');
  if (parsed.hostname) return { host: parsed.hostname, port };
  if (query?.startsWith('/')) return { socketFolder: query, port };
  return query ? { host: query, port } : undefined;
}

/** The URL without its password, for the banner and `/healthz`. */
export function describeUrl(url: string): string {
  const server = serverOf(url);
  if (!server) return 'the database URL given';
  const database = new URL(url).pathname.replace(/^\//, '') || 'postgres';
  const port = server.port ? `:${server.port}` : '';
  return server.socketFolder
    ? `${database} through the socket in ${server.socketFolder}${server.port ? ` (port ${server.port})` : ''}`
    : `${server.host}${port}/${database}`;
}
