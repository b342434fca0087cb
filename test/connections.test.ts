import { readFileSync } from 'node:fs';
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { capturingLogger } from './helpers.js';

/**
 * What happens to a connection before a request is read, over real sockets on loopback: the cap on
 * each client address (127.0.0.2, 127.0.0.3… are distinct clients on Linux, all on the loopback
 * interface) and plain HTTP sent to the HTTPS port.
 */

const HEALTH = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

function open(origin: string, from?: string): Socket {
  const { hostname, port } = new URL(origin);
  return connectTcp({ host: hostname, port: Number(port), ...(from ? { localAddress: from } : {}) });
}

/** Writes `request`, never ends its side, and reads until the server closes the connection. */
function exchange(socket: Socket, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server left the connection open; it sent: ${Buffer.concat(chunks)}`));
    }, 15_000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.once('close', () => {
      clearTimeout(giveUp);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    socket.once('connect', () => socket.write(request));
  });
}

/** A TLS connection from `from`, over a socket of its own (`tls.connect` types no `localAddress`). */
function openTls(origin: string, ca: Buffer, from?: string) {
  return connectTls({ socket: open(origin, from), ca, servername: 'localhost' });
}

/** Asks for /healthz once the TLS socket is up, and reads until the server closes the connection. */
function healthOverTls(socket: TLSSocket): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk;
    });
    socket.once('error', reject);
    socket.once('close', () => resolve(received));
    socket.once('secureConnect', () => socket.write(`${HEALTH.slice(0, -2)}Connection: close\r\n\r\n`));
  });
}

/** A kept-alive connection that has had one answer: the server has surely counted it. */
function heldConnection(origin: string, from: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = open(origin, from);
    let received = '';
    socket.once('error', reject);
    socket.on('data', (chunk) => {
      received += chunk;
      if (received.includes('"status":"ok"')) resolve(socket);
    });
    socket.once('close', () => reject(new Error(`closed before an answer: ${received}`)));
    socket.once('connect', () => socket.write(HEALTH));
  });
}

/** Status line, headers and body of the one answer in `raw`. */
function parse(raw: string) {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [
      line.slice(0, line.indexOf(':')).toLowerCase(),
      line.slice(line.indexOf(':') + 1).trim(),
    ]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, json: JSON.parse(body || 'null') };
}

describe('the cap on each client address (--max-connections-per-client)', () => {
  const { logger, lines } = capturingLogger();
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    // A listener cap a little above the per-client one: one client alone must not be able to fill it.
    sandbox = await startServer(testConfig({ maxConnections: 110 }), logger, {
      transport: { keepAliveTimeoutMs: 60_000 },
    });
  });
  afterAll(() => sandbox.close());

  it('closes a client’s connections past 100 at once, and keeps answering everyone else', async () => {
    expect(testConfig().maxConnectionsPerClient).toBe(100);
    const flood = '127.0.0.2';
    const held = await Promise.all(Array.from({ length: 100 }, () => heldConnection(sandbox.origin, flood)));
    try {
      // Its next ones are closed before a byte is read: nothing comes back.
      const extra = await Promise.all(
        Array.from({ length: 20 }, () => exchange(open(sandbox.origin, flood), HEALTH)),
      );
      expect(extra.every((raw) => raw === '')).toBe(true);
      expect(
        lines.some(
          (line) => line.level === 40 && line.maxConnectionsPerClient === 100 && line.address === flood,
        ),
      ).toBe(true);

      // Health probes from other addresses still get through, on both ports.
      for (const probe of ['127.0.0.3', '127.0.0.4', '127.0.0.1']) {
        const answer = parse(
          await exchange(open(sandbox.origin, probe), `${HEALTH.slice(0, -2)}Connection: close\r\n\r\n`),
        );
        expect([answer.status, answer.json]).toEqual([200, { status: 'ok', database: 'sqlite' }]);
      }
      const ca = readFileSync(sandbox.certificatePath);
      const secure = await healthOverTls(openTls(sandbox.httpsOrigin, ca, '127.0.0.5'));
      expect(parse(secure).status).toBe(200);

      // The flooding client's count is over both ports: its HTTPS connection is closed at once too.
      const refusedTls = await new Promise<string>((resolve) => {
        const socket = openTls(sandbox.httpsOrigin, ca, flood);
        socket.once('secureConnect', () => resolve('handshake completed'));
        socket.once('error', (error) => resolve((error as NodeJS.ErrnoException).code ?? error.message));
      });
      expect(refusedTls).not.toBe('handshake completed');

      // Once one of its connections closes, the client may open another.
      held.pop()?.destroy();
      await vi.waitFor(
        async () => {
          const answer = await exchange(
            open(sandbox.origin, flood),
            `${HEALTH.slice(0, -2)}Connection: close\r\n\r\n`,
          );
          expect(parse(answer).status).toBe(200);
        },
        { timeout: 5_000, interval: 50 },
      );
    } finally {
      for (const socket of held) socket.destroy();
    }
  });
});

describe('plain HTTP sent to the HTTPS port', () => {
  let sandbox: RunningSandbox;
  let ca: Buffer;
  beforeAll(async () => {
    sandbox = await startServer(testConfig(), undefined, { transport: { tlsHandshakeTimeoutMs: 500 } });
    ca = readFileSync(sandbox.certificatePath);
  });
  afterAll(() => sandbox.close());

  it.each([
    ['a GET', HEALTH],
    [
      'a POST with a body',
      'POST /v1/shipments HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
    ],
    ['bytes that are not HTTP either', 'hello\r\n'],
  ])('answers %s with 400 https_port_needs_tls, in plain HTTP, then closes', async (_what, request) => {
    const raw = await exchange(open(sandbox.httpsOrigin), request);
    const answer = parse(raw);
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/json');
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(answer.headers.connection).toBe('close');
    expect(answer.json).toEqual({
      error: { code: 'https_port_needs_tls', message: expect.stringContaining('https://') },
    });
  });

  it('serves TLS clients as before, beside them', async () => {
    const { port } = new URL(sandbox.httpsOrigin);
    const raw = await healthOverTls(
      connectTls({ host: '127.0.0.1', port: Number(port), ca, servername: 'localhost' }),
    );
    expect([parse(raw).status, parse(raw).json]).toEqual([200, { status: 'ok', database: 'sqlite' }]);
  });

  it('cuts off a connection that sends nothing, after the handshake time', async () => {
    const started = performance.now();
    const raw = await new Promise<string>((resolve) => {
      const socket = open(sandbox.httpsOrigin);
      let received = '';
      socket.on('data', (chunk) => {
        received += chunk;
      });
      socket.on('error', () => {});
      socket.once('close', () => resolve(received));
    });
    expect(raw).toBe('');
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(400);
    expect(waited).toBeLessThan(5_000);
  });
});
