import { createRoute, type RouteConfig, z } from '@hono/zod-openapi';
import { ErrorSchema } from '../core/schemas.js';
import { jsonResponse, openErrors, RATE_LIMIT_HEADERS, type Router } from './router.js';

type Document = ReturnType<Router['getOpenAPI31Document']>;
type PathItem = NonNullable<Document['paths']>[string];

export interface DocumentOptions {
  /**
   * The API's prefix (`/v1`). The document's `servers` point at `<origin>/v1` and its API paths are
   * written relative to it (`/shipments`), as a generated client's base URL expects; every other path
   * (`/_sandbox/…`, `/cdn/…`) carries a `servers` of its own, the bare origin.
   */
  apiPrefix: string;
  info: Document['info'];
  tags: NonNullable<Document['tags']>;
  /** The deliveries the sandbox POSTs to receivers: the document's `webhooks` section. */
  webhooks: readonly RouteConfig[];
}

/** The tag of the routes about the sandbox itself: its health, its metrics, this document. */
export const SERVICE_TAG = 'Service';

const RETRY_AFTER = {
  'Retry-After': {
    description: 'Seconds before asking again',
    required: true,
    schema: { type: 'integer' as const, minimum: 0 },
  },
};

/** `GET /healthz`: up or not, without a key. */
export const HEALTH_ROUTE = createRoute({
  method: 'get',
  path: '/healthz',
  operationId: 'getHealth',
  tags: [SERVICE_TAG],
  summary: 'Whether the sandbox is up and reaches its database (no key needed)',
  security: [],
  responses: {
    // Its 503 is its own answer, not the error body.
    ...openErrors(),
    200: jsonResponse(
      z
        .object({
          status: z.literal('ok'),
          database: z
            .enum(['sqlite', 'postgres'])
            .openapi({ description: 'The engine that keeps the data: SQLite, or PostgreSQL (`--database`)' }),
        })
        .openapi('Health'),
      'The sandbox is up',
    ),
    503: {
      ...jsonResponse(
        z
          .object({ status: z.literal('unavailable'), database: z.enum(['sqlite', 'postgres']) })
          .openapi('Unhealthy'),
        'The sandbox cannot reach its database (PostgreSQL): load balancers take it out of rotation',
      ),
      headers: RETRY_AFTER,
    },
  },
});

/** How long `/healthz` waits for the database before calling it out of reach. */
export const HEALTH_TIMEOUT_MS = 2_000;

/**
 * Serves the OpenAPI 3.1 document at `GET /openapi.json`. It is generated from the routes once, at
 * its first request (every route is mounted by then), and only its servers change per request: the
 * origin as the request reached the server.
 */
export function serveOpenApiDocument(app: Router, options: DocumentOptions): void {
  const registry = app.openAPIRegistry;
  registry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'A test key: `Authorization: Bearer svc_test_…`',
  });
  // Error answers refer to it by `$ref` (narrowing its `code` per route), so it is registered by name.
  registry.register('Error', ErrorSchema);
  for (const [name, header] of Object.entries(RATE_LIMIT_HEADERS))
    registry.registerComponent('headers', name, header);
  for (const webhook of options.webhooks) registry.registerWebhook(webhook);

  let described: ReturnType<typeof relativeToApi> | undefined;
  app.openapi(
    createRoute({
      method: 'get',
      path: '/openapi.json',
      operationId: 'getOpenApiDocument',
      tags: [SERVICE_TAG],
      summary: 'This document (OpenAPI 3.1)',
      security: [],
      responses: {
        200: jsonResponse(
          z.record(z.string(), z.unknown()).openapi({ description: 'an OpenAPI 3.1 document' }),
          'The document',
        ),
        ...openErrors(),
      },
    }),
    (c) => {
      described ??= relativeToApi(
        app.getOpenAPI31Document({
          openapi: '3.1.0',
          info: options.info,
          tags: [
            ...options.tags,
            { name: SERVICE_TAG, description: "The sandbox's health, its metrics and this document" },
          ],
        }),
        options.apiPrefix,
      );
      return c.json(withServers(described, new URL(c.req.url).origin, options.apiPrefix), 200);
    },
  );
}

/** The API's paths without their prefix; the others are noted, to be given the bare origin as their server. */
function relativeToApi(document: Document, prefix: string) {
  const paths: Record<string, PathItem> = {};
  const ownServer = new Set<string>();
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    const relative = path.startsWith(`${prefix}/`) ? path.slice(prefix.length) : path;
    if (paths[relative]) throw new Error(`two paths of the document would both be ${relative}`);
    paths[relative] = item;
    if (relative === path) ownServer.add(path);
  }
  return { document: { ...document, paths }, ownServer };
}

function withServers(
  { document, ownServer }: ReturnType<typeof relativeToApi>,
  origin: string,
  prefix: string,
): Document {
  const paths: Record<string, PathItem> = {};
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    paths[path] = ownServer.has(path)
      ? { servers: [{ url: origin, description: "The sandbox's own routes, outside the API" }], ...item }
      : item;
  }
  return { ...document, servers: [{ url: `${origin}${prefix}`, description: 'The API' }], paths };
}
