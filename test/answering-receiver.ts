import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** The envelope's `event`. */
  event: string;
}

/**
 * A real webhook receiver on loopback that decides each answer from what arrived: `answer` gives a
 * status, and how long to wait before sending it (a slow handler). Every request is kept.
 */
export async function startAnsweringReceiver(
  answer: (request: Received, index: number) => { status: number; delayMs?: number },
) {
  const requests: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const received = { headers: req.headers, body, event: (JSON.parse(body) as { event: string }).event };
      const { status, delayMs = 0 } = answer(received, requests.length);
      requests.push(received);
      const timer = setTimeout(() => res.writeHead(status).end(), delayMs);
      res.on('close', () => clearTimeout(timer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Whether the request carries the signature `secret` makes of its exact body, as a receiver checks it. */
export function signedBy(secret: string, request: Received): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(request.body).digest('hex')}`);
  const given = Buffer.from(String(request.headers['service-signature'] ?? ''));
  return expected.length === given.length && timingSafeEqual(expected, given);
}
