import { createRoute, z } from '@hono/zod-openapi';
import { type SSEMessage, streamSSE } from 'hono/streaming';
import { ACCOUNT_CAPS, ensureUnderCap } from '../core/caps.js';
import { requireScope } from '../http/auth.js';
import { BEARER_SECURITY, controlErrors, type Router } from '../http/router.js';
import { type JournaledRequest, presentRequest, type RequestJournal } from './journal.js';

/** How often an open stream says it is alive when nothing happens: proxies close silent connections. */
export const HEARTBEAT_MS = 15_000;

/**
 * Characters written to a stream but not yet taken by its client. A client that reads slower than its
 * account makes requests would otherwise make the sandbox hold every entry for it; past this, entries
 * are left out and counted, and the client is told how many once it catches up. Characters, not
 * entries: an entry carries its request's path and query, which may be long.
 */
const MAX_UNREAD_CHARACTERS = 1024 * 1024;

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
  /** By account, the streams open in this process. */
  const streamsOf = new Map<string, number>();

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
        '(`{"count": n}`). An account has at most 20 streams open at once on a server. Watching counts ' +
        "nowhere: not in the account's rate limits, its journal or its integration report.",
      security: BEARER_SECURITY,
      middleware: [requireScope('shipments:read')] as const,
      responses: {
        200: {
          description: 'The stream; it ends when the client goes away or the sandbox stops',
          content: { 'text/event-stream': { schema: z.string() } },
        },
        ...controlErrors('limit_reached'),
      },
    }),
    async (c) => {
      const { accountId } = c.get('caller');
      // Counted in this process: each stream holds what its client has not read yet.
      const held = streamsOf.get(accountId) ?? 0;
      ensureUnderCap(held, ACCOUNT_CAPS.requestStreams);
      streamsOf.set(accountId, held + 1);
      let counted = true;
      const letGo = () => {
        if (!counted) return;
        counted = false;
        const left = (streamsOf.get(accountId) ?? 1) - 1;
        if (left > 0) streamsOf.set(accountId, left);
        else streamsOf.delete(accountId);
      };
      // Following starts before the answer does, so that a database out of reach is a 503, not an
      // empty stream. What comes before the stream is ready waits for it.
      const early: JournaledRequest[] = [];
      let hear = (request: JournaledRequest) => {
        early.push(request);
      };
      let stopWatching: () => void;
      try {
        stopWatching = await journal.watch(accountId, (request) => hear(request));
      } catch (error) {
        letGo();
        throw error;
      }
      return streamSSE(
        c,
        (stream) =>
          new Promise<void>((ended) => {
            // One write at a time, in order; `unread` counts the characters the client has not taken yet.
            let writes = Promise.resolve();
            let unread = 0;
            let dropped = 0;
            const send = (message: SSEMessage | string) => {
              const size = typeof message === 'string' ? message.length : String(message.data).length;
              unread += size;
              writes = writes.then(async () => {
                await (typeof message === 'string' ? stream.write(message) : stream.writeSSE(message));
                unread -= size;
              });
            };
            const heartbeat = setInterval(() => send(': heartbeat\n\n'), heartbeatMs);
            const end = () => {
              clearInterval(heartbeat);
              letGo();
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
              if (unread >= MAX_UNREAD_CHARACTERS) {
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
