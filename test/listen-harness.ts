import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { createParser } from 'eventsource-parser';

/**
 * What the tests of `listen` share (with `serveSandbox` of helpers.ts): a client
 * of a stream of server-sent events, and a TCP proxy that a test can cut and restore.
 */

export interface StreamMessage {
  event: string;
  data: string;
  id: string | undefined;
}

/**
 * A client of a stream of server-sent events: every message (comments as `comment` events) in
 * order, and `next` to wait for the next one that matches, reading on as they come.
 */
export async function openStream(url: string, key: string) {
  const abort = new AbortController();
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
    signal: abort.signal,
  });
  const messages: StreamMessage[] = [];
  const waiters: { test: (m: StreamMessage) => boolean; resolve: (m: StreamMessage) => void }[] = [];
  let seen = 0;
  const take = (message: StreamMessage) => {
    messages.push(message);
    for (const waiter of [...waiters]) {
      if (waiter.test(message)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    }
  };
  const parser = createParser({
    onEvent: (m) => take({ event: m.event ?? 'message', data: m.data, id: m.id }),
    onComment: (comment) => take({ event: 'comment', data: comment.trim(), id: undefined }),
  });
  let closed = false;
  const ended = (async () => {
    if (!response.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch {
      // Cut off: the end.
    }
    closed = true;
  })();
  return {
    response,
    messages,
    /** Resolves with the first message from here on that matches (one already read counts once). */
    next(test: (m: StreamMessage) => boolean = () => true): Promise<StreamMessage> {
      for (; seen < messages.length; seen++) {
        const message = messages[seen] as StreamMessage;
        if (test(message)) {
          seen += 1;
          return Promise.resolve(message);
        }
      }
      return new Promise((resolve, reject) => {
        waiters.push({
          test,
          resolve: (message) => {
            seen = messages.indexOf(message) + 1;
            resolve(message);
          },
        });
        void ended.then(() => reject(new Error(`the stream ended; it sent ${JSON.stringify(messages)}`)));
      });
    },
    /** Resolves once the server ended the stream. */
    ended,
    get closed() {
      return closed;
    },
    close() {
      abort.abort();
    },
  };
}

export type OpenStream = Awaited<ReturnType<typeof openStream>>;

/**
 * A TCP proxy on loopback in front of `target`: `cut()` drops every connection through it and
 * refuses new ones until `restore()`, as a network that goes away and comes back.
 */
export async function startProxy(target: string) {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  let refusing = false;
  const server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(port), hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut() {
      refusing = true;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      refusing = false;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
