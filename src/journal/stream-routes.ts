import { createRoute, z } from '@hono/zod-openapi';
import { type SSEMessage, streamSSE } from 'hono/streaming';
import { requireScope } from '../http/auth.js';
import { BEARER_SECURITY, controlErrors, type Router } from '../http/router.js';
import { type JournaledRequest, presentRequest, type RequestJournal } from './journal.js';

/** How often an open stream says it is alive when nothing happens: proxies close silent connections. */
export const HEARTBEAT_MS = 15_000;

/**
 * Entries written to a stream but not yet taken by its client. A client that reads slower than its
 * account makes requests would otherwise make the sandbox hold every entry for it; past this, entries
 * are left out and counted, and the client is told how many once it catches up.
 */
const MAX_UNREAD = 1000;

/**
 * `GET /requests/stream`: the account's API requests as the journal records them (every replica's),
 * as server-sent events (`shipping-sandbox logs tail` reads it). A stream under `/_sandbox`, so
 * watching costs the account nothing: no rate limit, no journal entry, nothing in the integration
 * report.
 *
 * Answers the function that ends every open stream (the sandbox stopping), so that none holds the
 * shutdown up.
 */
export function addRequestStream(
  router: Router,
  journal: RequestJournal,
  options: { heartbeatMs?: number } = {},
): () => void {
  const heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
  const open = new Set<() => void>();

  router.openapi(
    createRoute({
      method: 'get',
      path: '/requests/stream',
      operationId: 'streamRequests',
      tags: ['Sandbox controls'],
      summary: "The account's API requests as they happen, as server-sent events",
      description:
        'One `request` event a request the journal records, `id` its `req_…` id and `data` the ' +
        '`JournalEntry` as JSON. A comment line every 15 s keeps the connection alive. When the client ' +
        'reads slower than requests come, entries are left out and a `dropped` event says how many ' +
        '(`{"count": n}`). Watching counts nowhere: not in the account\'s rate limits, its journal or ' +
        'its integration report.',
      security: BEARER_SECURITY,
      middleware: [requireScope('shipments:read')] as const,
      responses: {
        200: {
          description: 'The stream; it ends when the client goes away or the sandbox stops',
          content: { 'text/event-stream': { schema: z.string() } },
        },
        ...controlErrors(),
      },
    }),
    async (c) => {
      const { accountId } = c.get('caller');
      // Following starts before the answer does, so that a database out of reach is a 503, not an
      // empty stream. What comes before the stream is ready waits for it.
      const early: JournaledRequest[] = [];
      let hear = (request: JournaledRequest) => {
        early.push(request);
      };
      const stopWatching = await journal.watch(accountId, (request) => hear(request));
      return streamSSE(
        c,
        (stream) =>
          new Promise<void>((ended) => {
            // One write at a time, in order; `unread` counts those the client has not taken yet.
            let writes = Promise.resolve();
            let unread = 0;
            let dropped = 0;
            const send = (message: SSEMessage | string) => {
              unread += 1;
              writes = writes.then(async () => {
                await (typeof message === 'string' ? stream.write(message) : stream.writeSSE(message));
                unread -= 1;
              });
            };
            const heartbeat = setInterval(() => send(': heartbeat\n\n'), heartbeatMs);
            const end = () => {
              clearInterval(heartbeat);
              stopWatching();
              open.delete(end);
              ended();
            };
            open.add(end);
            // The client went away (Node's adapter cancels the body), or the stream was ended here.
            stream.onAbort(end);
            // Sends the head at once: the client knows it is listening before any request comes.
            send(': listening\n\n');
            hear = (request) => {
              if (unread >= MAX_UNREAD) {
                dropped += 1;
                return;
              }
              if (dropped > 0) {
                send({ event: 'dropped', data: JSON.stringify({ count: dropped }) });
                dropped = 0;
              }
              send({ event: 'request', id: request.id, data: JSON.stringify(presentRequest(request)) });
            };
            for (const request of early.splice(0)) hear(request);
          }),
      );
    },
  );

  return () => {
    for (const end of open) end();
  };
}
