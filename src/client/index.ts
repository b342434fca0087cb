/**
 * The typed client of the Shipping Sandbox: `import { createClient } from 'shipping-sandbox/client'`.
 *
 * Everything here is generated from, or checked against, the sandbox's OpenAPI document, and runs in
 * a merchant's program: it imports nothing of the server, only `openapi-fetch` and Node's `crypto`
 * (for `verifySignature`).
 */
import createFetchClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from './schema.js';

export type { components, operations, paths, webhooks } from './schema.js';
export { verifySignature } from './signature.js';
export type * from './types.js';

/** The paths outside the API: each has a server of its own in the document, the bare origin. */
type OriginPath = '/healthz' | '/openapi.json' | `/_sandbox/${string}` | `/cdn/${string}`;

/** The API's paths, relative to its base URL (`…/v1`): `/shipments`, `/labels/{id}`. */
export type ApiPaths = { [P in keyof paths as P extends OriginPath ? never : P]: paths[P] };
/** The sandbox's controls (and its health), relative to its origin: `/_sandbox/clock/advance`. */
export type SandboxPaths = {
  [P in keyof paths as P extends `/_sandbox/${string}` | '/healthz' ? P : never]: paths[P];
};

export type ApiClient = Client<ApiPaths>;
export type SandboxClient = Client<SandboxPaths>;

/** The `fetch` the client calls; the global one unless given (a recorder, a proxy, MSW). */
export type Fetch = (request: Request) => Promise<Response>;

export interface ClientOptions {
  /** The API's URL, ending in `/v1`: `http://127.0.0.1:4010/v1` (`startSandbox()`'s `url`). */
  baseUrl: string;
  /** A test key (`svc_test_…`), sent on every request as `Authorization: Bearer`. */
  apiKey: string;
  fetch?: Fetch;
  /** Headers sent on every request besides the key. */
  headers?: Record<string, string>;
}

/**
 * A client of the API, in the style of openapi-fetch: `await client.POST('/shipments', { body })`
 * resolves to `{ data, error, response }`, `data` typed by the route's success and `error` by its
 * errors (their `code`s narrowed to the route's own). A label download needs
 * `parseAs: 'blob'` or `'arrayBuffer'`; without it the client throws a TypeError that says so.
 */
export function createClient(options: ClientOptions): ApiClient {
  const client = createFetchClient<ApiPaths>({
    baseUrl: options.baseUrl,
    headers: { ...options.headers, Authorization: `Bearer ${options.apiKey}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  client.use(filesNeedParseAs);
  return client;
}

export interface SandboxClientOptions {
  /** The sandbox's origin, without `/v1`: `http://127.0.0.1:4010` (`startSandbox()`'s `origin`). */
  origin: string;
  /**
   * The account's test key. Leave it out only to create an account (`POST /_sandbox/accounts`); on a
   * sandbox started with `--admin-token`, creating one takes that token here instead.
   */
  apiKey?: string;
  fetch?: Fetch;
  headers?: Record<string, string>;
}

/**
 * A client of the sandbox's own controls (accounts, keys, the clock, events, faults, tracking
 * levers): `await sandbox.POST('/_sandbox/clock/advance', { body: { by: '2h' } })`.
 */
export function createSandboxClient(options: SandboxClientOptions): SandboxClient {
  return createFetchClient<SandboxPaths>({
    baseUrl: options.origin,
    headers: {
      ...options.headers,
      ...(options.apiKey === undefined ? {} : { Authorization: `Bearer ${options.apiKey}` }),
    },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

/**
 * openapi-fetch reads every answer as JSON unless told otherwise, and a label file is not JSON: rather
 * than a parse error about `%PDF`, the caller learns what to pass.
 */
const filesNeedParseAs: Middleware = {
  onResponse({ response, options, schemaPath }) {
    const type = response.headers.get('content-type') ?? '';
    if (options.parseAs !== 'json' || !response.ok || type === '' || /\bjson\b/i.test(type)) return;
    throw new TypeError(
      `${schemaPath} answers a file (${type}), not JSON: pass parseAs: 'blob' or 'arrayBuffer' to read it`,
    );
  },
};
