import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Receiver {
  /** A URL the receiver answers 204 on. */
  url: string;
  /** A URL the receiver answers 500 on, so deliveries fail and retries get scheduled. */
  failingUrl: string;
  received(): number;
  close(): Promise<void>;
}

/**
 * The webhook receiver of the fuzzing pass, on a loopback port: every webhook the fuzzer registers
 * points here (or at another loopback address), so deliveries run, succeed and fail for real.
 */
export async function startReceiver(): Promise<Receiver> {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      res.writeHead(req.url?.startsWith('/fail') ? 500 : 204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    failingUrl: `http://127.0.0.1:${port}/fail`,
    received: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
