import { createRoute, z } from '@hono/zod-openapi';
import { type SSEMessage, streamSSE } from 'hono/streaming';
import { requireScope } from '../http/auth.js';
import { BEARER_SECURITY, controlErrors, ErrorCodes, idParam, type Router } from '../http/router.js';
import type { SessionHolder, StreamSink } from './holder.js';
import { DeliveryMessageSchema, ReadyMessageSchema } from './schema.js';

/** How long a closing stream waits for its last messages to be taken in. */
const CLOSE_GRACE_MS = 5000;

/**
 * `GET /listeners/{id}/stream`: the connection that holds a listen session, as server-sent events
 * (`shipping-sandbox listen` reads it). Server-sent events down and a plain POST back for each
 * answer: an ordinary GET that passes any HTTP/1.1 reverse proxy and HTTP/2 without an upgrade, with
 * the same key as every other call, and readable with `curl -N`.
 */
export function addListenerStream(router: Router, holder: SessionHolder): void {
  // What the stream's events carry, in the document though no route answers them as JSON.
  router.openAPIRegistry.register('ListenerReady', ReadyMessageSchema);
  router.openAPIRegistry.register('ListenerDeliveryMessage', DeliveryMessageSchema);
  router.openapi(
    createRoute({
      method: 'get',
      path: '/listeners/{id}/stream',
      operationId: 'streamListener',
      tags: ['Sandbox controls'],
      summary: "The listen session's deliveries, as server-sent events",
      description:
        'Holds the session until the client goes away (a newer connection to the same session takes it over). ' +
        'First a `ready` event (`ListenerReady`: the session, its signing secret, the heartbeat and the forward ' +
        'timeout), then one `delivery` event a delivery, `id` the attempt and `data` a `ListenerDeliveryMessage`: ' +
        'POST `body` to `forward_to` with the headers of a webhook delivery signed with `secret`, then report ' +
        'the answer to `POST …/deliveries/{delivery_id}/outcome`. Deliveries not answered yet are sent again on ' +
        'the next connection: drop those already seen by `id`. A `: heartbeat` comment comes every 15 s; answer ' +
        'each with `POST …/heartbeat`. An `ended` event says the session is over (the account was reset). A ' +
        'session ended (its connection closed more than 10 s ago) answers `404 not_found`: open a new one.',
      security: BEARER_SECURITY,
      middleware: [requireScope('shipments:read')] as const,
      request: { params: idParam('lsn_01JD…') },
      responses: {
        200: {
          description:
            'The stream; it ends when the client goes away, another connection takes the session, or the sandbox stops',
          content: { 'text/event-stream': { schema: z.string() } },
        },
        ...controlErrors(...ErrorCodes.lookup, ...ErrorCodes.write),
      },
    }),
    async (c) => {
      const connection = await holder.take(c.get('caller'), c.req.valid('param').id);
      // nginx holds a proxied answer back until its buffer fills unless told not to; a stream must flow.
      c.header('X-Accel-Buffering', 'no');
      return streamSSE(
        c,
        (stream) =>
          new Promise<void>((ended) => {
            // One write at a time, in order.
            let writes = Promise.resolve();
            const write = (message: SSEMessage | string) => {
              writes = writes
                .then(async () => {
                  await (typeof message === 'string' ? stream.write(message) : stream.writeSSE(message));
                })
                .catch(() => undefined);
            };
            let done = false;
            const end = () => {
              if (done) return;
              done = true;
              void holder.release(connection);
              ended();
            };
            const sink: StreamSink = {
              event: (event, data, id) => write({ event, data, ...(id ? { id } : {}) }),
              comment: (text) => write(`: ${text}\n\n`),
              // The writes already queued go first, unless the command does not take them in: a
              // client that stopped reading would hold the stream (and what waits for it) for good.
              close: () => {
                const giveUp = setTimeout(() => {
                  stream.abort();
                  end();
                }, CLOSE_GRACE_MS).unref();
                void writes.then(() => {
                  clearTimeout(giveUp);
                  end();
                });
              },
            };
            // The client went away (Node's adapter cancels the body), or the stream was ended here.
            stream.onAbort(end);
            holder.open(connection, sink);
          }),
      );
    },
  );
}
