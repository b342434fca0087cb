import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** How the receiver answers a request: a status, or `hang` to never answer. */
export type Reply = number | 'hang';

/**
 * A real webhook receiver on a local port. `replies` decides each answer in turn (the last one
 * repeats); every request is recorded with its exact body bytes. `nextRequest()` resolves when the
 * next request arrives, so tests wait on events, never on the wall clock.
 */
export async function startReceiver(replies: Reply[] = [200]) {
  const requests: ReceivedRequest[] = [];
  const hanging: ServerResponse[] = [];
  const waiters: ((request: ReceivedRequest) => void)[] = [];
  const script = [...replies];

  const server = createServer((req, res) => {
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
      const reply = script.length > 1 ? script.shift() : script[0];
      if (reply === 'hang') hanging.push(res);
      else {
        res.writeHead(reply ?? 200, { 'content-type': 'text/plain' });
        res.end(`receiver says ${reply}`);
      }
      for (const waiter of waiters.splice(0)) waiter(request);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/hooks`,
    requests,
    /** Changes how later requests are answered. */
    reply(next: Reply[]) {
      script.splice(0, script.length, ...next);
    },
    nextRequest(): Promise<ReceivedRequest> {
      return new Promise((resolve) => waiters.push(resolve));
    },
    async close() {
      for (const res of hanging) res.destroy();
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
