import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { describe, expect, it } from 'vitest';
import { readRequest, requireJsonObjectBody } from '../src/http/body.js';
import type { AppEnv } from '../src/http/context.js';
import { errorHandler } from '../src/http/errors.js';
import { createRouter, jsonBody } from '../src/http/router.js';
import { capturingLogger } from './helpers.js';

/**
 * `readRequest` reads a request's body from its stream and hands the text back to Hono as the text its
 * request keeps (`c.req.bodyCache.text`); these fail if Hono's validators stop reading the body from
 * there, or `@hono/zod-openapi` stops running `defaultHook` for a router's routes.
 */
function app() {
  const router = createRouter();
  router.openapi(
    createRoute({
      method: 'post',
      path: '/things',
      request: { body: jsonBody(z.object({ name: z.string() }).strict()) },
      responses: { 200: { description: 'ok' } },
    }),
    (c) => c.json({ got: c.req.valid('json') }, 200),
  );
  const root = new OpenAPIHono<AppEnv>();
  root.onError(errorHandler(capturingLogger().logger));
  root.use('*', readRequest, requireJsonObjectBody);
  root.route('/', router);
  return root;
}

const post = (body: BodyInit | null, headers: Record<string, string> = {}) =>
  app().request('/things', { method: 'POST', body, headers });

describe('request bodies through Hono', () => {
  it("hands the body read from the stream to the route's validator", async () => {
    const response = await post('{"name":"Ada"}', { 'content-type': 'application/json' });
    expect([response.status, await response.json()]).toEqual([200, { got: { name: 'Ada' } }]);
  });

  it('validates an empty JSON body as {}, through the hook, as the contract asks', async () => {
    const response = await post('', { 'content-type': 'application/json' });
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ error: { code: 'missing_field', field: 'name' } });
  });

  it('validates a body-less request as {} without giving it a media type', async () => {
    const response = await post(null);
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ error: { code: 'missing_field', field: 'name' } });
  });

  it('refuses a body over 1 MiB as it streams in', async () => {
    const huge = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(`{"name":"${'x'.repeat(1024 * 1024)}"}`));
        controller.close();
      },
    });
    const response = await app().request('/things', {
      method: 'POST',
      body: huge,
      headers: { 'content-type': 'application/json' },
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'request_too_large' } });
  });

  it('reads a body as UTF-8 only: other bytes, another charset and a compressed body are refused', async () => {
    const server = serve({ fetch: app().fetch, hostname: '127.0.0.1', port: 0 }) as Server;
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const send = async (bytes: Buffer, headers: Record<string, string>) => {
        const body = new Uint8Array(bytes);
        const sent = { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } };
        const answers = [
          await app().request('/things', sent),
          await fetch(`http://127.0.0.1:${port}/things`, sent),
        ];
        return Promise.all(answers.map(async (answer) => [answer.status, await answer.json()]));
      };
      // "Zoë" in Latin-1: not UTF-8, whatever it says it is.
      const latin1 = Buffer.from('{"name":"Zo\xeb"}', 'latin1');
      for (const [status, body] of await send(latin1, {}))
        expect([status, body.error.code]).toEqual([400, 'invalid_json']);
      for (const [status, body] of await send(latin1, {
        'content-type': 'application/json; charset=iso-8859-1',
      }))
        expect([status, body.error]).toEqual([
          400,
          {
            code: 'unsupported_content_type',
            message: 'Request bodies are read as UTF-8, as JSON is; charset=iso-8859-1 is not taken.',
          },
        ]);
      for (const [status, body] of await send(Buffer.from('{"name":"Zoë"}'), { 'content-encoding': 'gzip' }))
        expect([status, body.error.code]).toEqual([400, 'unsupported_content_type']);
      for (const [status, body] of await send(Buffer.from('{"name":"Zoë"}'), {
        'content-type': 'application/json; charset="UTF-8"',
      }))
        expect([status, body]).toEqual([200, { got: { name: 'Zoë' } }]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('refuses blanks sent without a media type alike in process and over a socket', async () => {
    const blanks = () => ({ method: 'POST', body: new TextEncoder().encode('   ') });
    const inProcess = await app().request('/things', blanks());
    const server = serve({ fetch: app().fetch, hostname: '127.0.0.1', port: 0 }) as Server;
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const overSocket = await fetch(`http://127.0.0.1:${port}/things`, blanks());
      for (const answer of [inProcess, overSocket]) {
        expect(answer.status).toBe(400);
        expect(await answer.json()).toMatchObject({ error: { code: 'unsupported_content_type' } });
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
