import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { ApiError } from '../src/core/errors.js';
import { openDatabase } from '../src/db/database.js';
import { chain } from '../src/http/chain.js';
import type { AppEnv } from '../src/http/context.js';
import { errorHandler } from '../src/http/errors.js';
import { createRouter, idParam, jsonBody } from '../src/http/router.js';
import { loadScenarios, scenarioDirectories } from '../src/scenarios/files.js';
import { createSandbox } from '../src/wiring.js';
import { capturingLogger, DEFAULT_KEY, shipmentRequest } from './helpers.js';

type Step = MiddlewareHandler<AppEnv>;

/** The same handlers, run by Hono's compose (as middleware and a route) and as one chained handler. */
function bothWays(build: (log: string[]) => Step[]) {
  const onError = errorHandler(capturingLogger().logger);
  const composedLog: string[] = [];
  const composed = new OpenAPIHono<AppEnv>();
  composed.onError(onError);
  const [first, ...rest] = build(composedLog);
  composed.use('/x', first as Step, ...rest.slice(0, -1));
  composed.get('/x', rest.at(-1) as Step);
  const chainedLog: string[] = [];
  const chained = new OpenAPIHono<AppEnv>();
  chained.onError(onError);
  chained.get('/x', chain(build(chainedLog), onError));
  return async () => {
    const answers = [];
    for (const [app, log] of [
      [composed, composedLog],
      [chained, chainedLog],
    ] as const) {
      log.length = 0;
      const response = await app.request('/x');
      answers.push({ status: response.status, body: await response.text(), log: [...log] });
    }
    return answers;
  };
}

const around =
  (name: string, log: string[]): Step =>
  async (c, next) => {
    log.push(`${name} in`);
    await next();
    log.push(`${name} out ${c.res.status} ${c.error instanceof ApiError ? c.error.code : '-'}`);
  };

describe('handlers chained into one', () => {
  it.each([
    [
      'every step answers at once',
      (log: string[]) => [around('a', log), (_c, next) => next(), (c) => c.text('ok')],
    ],
    [
      'a step waits',
      (log: string[]) => [
        around('a', log),
        async (_c, next) => {
          await new Promise((resolve) => setTimeout(resolve, 1));
          return next();
        },
        (c) => c.text('ok'),
      ],
    ],
    [
      'a step throws at once',
      (log: string[]) => [
        around('a', log),
        () => {
          throw new ApiError(403, 'insufficient_scope', 'no');
        },
        (c) => c.text('never'),
      ],
    ],
    [
      'a step rejects',
      (log: string[]) => [
        around('a', log),
        around('b', log),
        async () => {
          throw new ApiError(422, 'invalid_field', 'bad', { field: 'x' });
        },
      ],
    ],
    [
      'the route throws something unexpected',
      (log: string[]) => [
        around('a', log),
        () => {
          throw new TypeError('boom');
        },
      ],
    ],
    [
      'a step answers without going on',
      (log: string[]) => [around('a', log), (c) => c.text('early', 202), (c) => c.text('late')],
    ],
    [
      'a step calls next twice',
      (log: string[]) => [
        around('a', log),
        async (_c, next) => {
          await next();
          await next();
        },
        (c) => c.text('ok'),
      ],
    ],
  ] as [string, (log: string[]) => Step[]][])(
    'answer as Hono composes them when %s',
    async (_case, build) => {
      const [composed, chained] = await bothWays(build)();
      expect(chained).toEqual(composed);
    },
  );

  it("answers a read of the API within the call, with the same bytes as Hono's own dispatch", async () => {
    // Logging each request (at `info`) is a middleware of every path, which Hono composes with the route.
    const sandbox = createSandbox({
      db: openDatabase(':memory:'),
      config: testConfig(),
      logger: pino({ level: 'warn' }),
      scenarios: loadScenarios(scenarioDirectories(undefined)),
    });
    const call = (method: string, path: string, body?: string) =>
      sandbox.app.fetch(
        new Request(`http://localhost${path}`, {
          method,
          headers: { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' },
          body,
        }),
      );
    const created = call('POST', '/v1/shipments', JSON.stringify(shipmentRequest()));
    // A request that waits (its body is read) answers through a promise.
    expect(created).toBeInstanceOf(Promise);
    const { id } = (await (await created).json()) as { id: string };
    const read = call('GET', `/v1/shipments/${id}`);
    expect(read).toBeInstanceOf(Response);
    const again = await sandbox.app.request(`/v1/shipments/${id}`, {
      headers: { authorization: `Bearer ${DEFAULT_KEY}` },
    });
    expect([(read as Response).status, await (read as Response).text()]).toEqual([
      again.status,
      await again.text(),
    ]);
    expect(call('GET', '/v1/shipments?limit=1')).toBeInstanceOf(Response);
    await sandbox.stop();
  });
});

describe("a router's validators", () => {
  const Body = z.object({ name: z.string().min(2), size: z.number().int().optional() }).strict();
  const Query = z.object({ limit: z.string().optional(), status: z.enum(['a', 'b']).optional() });
  const routes = [
    createRoute({
      method: 'post',
      path: '/things/{id}',
      request: { params: idParam(), query: Query, body: jsonBody(Body) },
      responses: { 200: { description: 'ok' } },
    }),
    createRoute({
      method: 'get',
      path: '/things',
      request: { query: Query },
      responses: { 200: { description: 'ok' } },
    }),
  ];

  /** A router as the sandbox makes them, and the same routes registered by `@hono/zod-openapi` itself. */
  function routers() {
    const made = createRouter();
    const plain = new OpenAPIHono<AppEnv>({ defaultHook: made.defaultHook });
    const onError = errorHandler(capturingLogger().logger);
    for (const router of [made, plain]) {
      router.onError(onError);
      for (const route of routes) {
        router.openapi(route, (c) =>
          c.json({
            param: c.req.valid('param' as never),
            query: c.req.valid('query' as never),
            json: c.req.valid('json' as never),
          }),
        );
      }
    }
    return { made, plain };
  }

  it.each([
    ['POST', '/things/t1?limit=3', { 'content-type': 'application/json' }, '{"name":"ab","size":2}'],
    [
      'POST',
      '/things/t%201?status=b',
      { 'content-type': 'application/json; charset=utf-8' },
      '{"name":"ab"}',
    ],
    ['POST', '/things/t1', { 'content-type': 'application/json' }, '{"name":"a"}'],
    ['POST', '/things/t1', { 'content-type': 'application/json' }, '{"name":"ab","extra":1}'],
    ['POST', '/things/t1', { 'content-type': 'application/json' }, '{"size":"x"}'],
    ['POST', '/things/t1', { 'content-type': 'application/json' }, '{"name":'],
    ['POST', '/things/t1', { 'content-type': 'application/vnd.api+json' }, '{"name":"ab"}'],
    ['POST', '/things/t1', { 'content-type': 'text/plain' }, '{"name":"ab"}'],
    ['POST', '/things/t1', { 'content-type': 'text/plain' }, ''],
    ['POST', '/things/t1', {}, ''],
    ['POST', '/things/t1', {}, '{"name":"ab"}'],
    ['POST', '/things/t1?status=c', { 'content-type': 'application/json' }, '{"name":"ab"}'],
    ['POST', '/things/t1?limit=1&limit=2', { 'content-type': 'application/json' }, '{"name":"ab"}'],
    ['GET', '/things?status=a&other=1', {}, undefined],
    ['GET', '/things?status=z', {}, undefined],
    ['GET', '/things?status=a&status=b', {}, undefined],
  ] as [string, string, Record<string, string>, string | undefined][])(
    'answer %s %s as those of @hono/zod-openapi do',
    async (method, path, headers, body) => {
      const { made, plain } = routers();
      const answers = [];
      for (const router of [made, plain]) {
        const response = await router.request(path, { method, headers, body });
        answers.push({ status: response.status, body: await response.text() });
      }
      expect(answers[0]).toEqual(answers[1]);
    },
  );

  it('describe the routes in the document as @hono/zod-openapi does', () => {
    const { made, plain } = routers();
    const document = (router: OpenAPIHono<AppEnv>) =>
      router.getOpenAPI31Document({ openapi: '3.1.0', info: { title: 't', version: '1' } });
    expect(document(made)).toEqual(document(plain));
  });
});
