import type { Context } from 'hono';
import { ApiError } from '../core/errors.js';
import { createRouter } from '../http/router.js';
import type { SandboxModule } from '../module.js';
import { dashboardBundle, type StaticFile, staticFile } from './bundle.js';
import { DASHBOARD_PAGE, DOCS_PAGE, ICON_SVG, pageHeaders } from './pages.js';
import { swaggerFiles } from './swagger.js';

/**
 * The QA dashboard (`/dashboard`) and the API reference (`/docs`), both served whole by the sandbox:
 * their pages, the dashboard's bundled script and Swagger UI's files, with nothing fetched from
 * elsewhere. They take no key: the dashboard signs in with an account's key in the browser and
 * calls `/v1` and `/_sandbox` with it like any client, so it can do nothing that key cannot.
 * `GET /` from a browser leads to the dashboard; an API client still gets `404 route_not_found`.
 */
export function dashboardModule(
  deps: {
    bundle?: () => Promise<ReadonlyMap<string, StaticFile>>;
    swagger?: (name: string) => Promise<StaticFile | undefined>;
  } = {},
): SandboxModule {
  const bundle = deps.bundle ?? dashboardBundle();
  const swagger = deps.swagger ?? swaggerFiles();
  const icon = staticFile('icon.svg', new TextEncoder().encode(ICON_SVG));

  const dashboard = createRouter();
  dashboard.get('/', (c) => c.html(DASHBOARD_PAGE, 200, pageHeaders('dashboard')));
  dashboard.get('/assets/:file', async (c) => {
    const name = c.req.param('file');
    const file = name === 'icon.svg' ? icon : (await bundle()).get(name);
    return serve(c, file, name);
  });

  const docs = createRouter();
  docs.get('/', (c) => c.html(DOCS_PAGE, 200, pageHeaders('docs')));
  docs.get('/assets/:file', async (c) => serve(c, await swagger(c.req.param('file')), c.req.param('file')));

  const root = createRouter();
  // Middleware, not a route: `/` stays a path no route has, so an API client gets `404
  // route_not_found` for any method, as before; only a browser asking for a page is sent on.
  root.use('/', async (c, next) => {
    const wantsPage = c.req.method === 'GET' || c.req.method === 'HEAD';
    if (wantsPage && c.req.header('accept')?.includes('text/html')) return c.redirect('dashboard', 302);
    await next();
  });
  // `/dashboard/` and `/docs/` lead to the pages: at those paths the pages' relative links would miss.
  // A relative Location (as above), not hono/trailing-slash's, which is absolute and built from the
  // request's Host and scheme: behind a TLS-terminating proxy, or one that serves the sandbox under a
  // path of its own, that sends the browser to the wrong place.
  for (const page of ['dashboard', 'docs']) {
    root.get(`/${page}/`, (c) => c.redirect(`../${page}${new URL(c.req.url).search}`, 301));
  }

  return {
    name: 'dashboard',
    build: () => ({ mounts: { '/dashboard': dashboard, '/docs': docs, '/': root } }),
  };
}

function serve(c: Context, file: StaticFile | undefined, name: string): Response {
  if (!file) throw new ApiError(404, 'not_found', `No file '${name}' here.`);
  const headers = {
    'content-type': file.contentType,
    etag: file.etag,
    // Revalidated on every load (a 304 when unchanged), so a new version is picked up at once.
    'cache-control': 'no-cache',
    'x-content-type-options': 'nosniff',
  };
  if (c.req.header('if-none-match') === file.etag) return c.body(null, 304, headers);
  return c.body(file.bytes as Uint8Array<ArrayBuffer>, 200, headers);
}
