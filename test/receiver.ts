import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * How the receiver answers a request: a status; `hang` to never answer; `trickle` to answer 200 and
 * then send its body one byte at a time, never ending it; or a status with headers and a body (a
 * redirect's `location`).
 */
export type Reply =
  | number
  | 'hang'
  | 'trickle'
  | { status: number; headers?: Record<string, string>; body?: string | Buffer };

/** How often a trickling answer sends its next byte. */
const TRICKLE_EVERY_MS = 25;

/**
 * A real webhook receiver on a local port. `replies` decides each answer in turn (the last one
 * repeats); every request is recorded with its exact body bytes. `nextRequest()` resolves when the
 * next request arrives, so tests wait on events, never on the wall clock. With `tls`, it serves
 * HTTPS with that certificate and records the server name each client asked for (SNI).
 */
export async function startReceiver(
  replies: Reply[] = [200],
  options: { tls?: { key: string; cert: string } } = {},
) {
  const requests: ReceivedRequest[] = [];
  /** Answers held open (`hang`, `trickle`), each with how to finish it. */
  const held: { res: ServerResponse; finish: (status: number) => void }[] = [];
  const serverNames: string[] = [];
  const waiters: ((request: ReceivedRequest) => void)[] = [];
  const script = [...replies];

  const answer = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      requests.push(request);
      const reply = (script.length > 1 ? script.shift() : script[0]) ?? 200;
      if (reply === 'hang') {
        held.push({ res, finish: (status) => res.writeHead(status).end(`receiver says ${status}`) });
      } else if (reply === 'trickle') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => res.write('.'), TRICKLE_EVERY_MS);
        res.on('close', () => clearInterval(timer));
        held.push({
          res,
          finish: () => {
            clearInterval(timer);
            res.end();
          },
        });
      } else if (typeof reply === 'number') {
        res.writeHead(reply, { 'content-type': 'text/plain' });
        res.end(`receiver says ${reply}`);
      } else {
        res.writeHead(reply.status, { 'content-type': 'text/plain', ...reply.headers });
        res.end(reply.body ?? '');
      }
      for (const waiter of waiters.splice(0)) waiter(request);
    });
  };
  const server = options.tls
    ? createTlsServer(
        {
          ...options.tls,
          SNICallback: (name, done) => {
            serverNames.push(name);
            done(null);
          },
        },
        answer,
      )
    : createServer(answer);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}/hooks`,
    port,
    requests,
    /** TLS only: the server names clients asked for, in order. */
    serverNames,
    /** Changes how later requests are answered. */
    reply(next: Reply[]) {
      script.splice(0, script.length, ...next);
    },
    /** Answers every request held open so far (`hang`, `trickle`) with `status`. */
    release(status = 200) {
      for (const { res, finish } of held.splice(0)) if (!res.destroyed) finish(status);
    },
    nextRequest(): Promise<ReceivedRequest> {
      return new Promise((resolve) => waiters.push(resolve));
    },
    async close() {
      for (const { res } of held.splice(0)) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * A receiver that answers 200 with a body of `totalBytes`, written as fast as the client reads it.
 * `outcome` resolves when the connection closes: how many bytes were written by then, and whether
 * the whole body was.
 */
export async function startFloodingReceiver(totalBytes: number) {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  let resolveOutcome: (outcome: { written: number; complete: boolean }) => void = () => {};
  const outcome = new Promise<{ written: number; complete: boolean }>((resolve) => {
    resolveOutcome = resolve;
  });
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      let written = 0;
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': totalBytes });
      res.on('close', () => resolveOutcome({ written, complete: res.writableFinished }));
      const pump = () => {
        while (written < totalBytes && !res.destroyed) {
          const part = chunk.subarray(0, Math.min(chunk.length, totalBytes - written));
          written += part.length;
          if (!res.write(part)) {
            res.once('drain', pump);
            return;
          }
        }
        if (written >= totalBytes) res.end();
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    outcome,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A URL on which nothing listens: a port the system just handed out and took back. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/hooks`;
}
