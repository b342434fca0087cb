import { readFileSync } from 'node:fs';
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls, TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { capturingLogger, DEFAULT_KEY } from './helpers.js';

/** What came back on a connection, read until the server closed it. */
interface Answer {
  /** Every byte received. */
  raw: string;
  status: number;
  headers: Record<string, string>;
  body: string;
  json: any;
}

/** Loopback only: the sandboxes below listen on 127.0.0.1. */
function open(origin: string, ca?: Buffer): Socket {
  const { hostname, port } = new URL(origin);
  return ca
    ? connectTls({ host: hostname, port: Number(port), ca, servername: 'localhost' })
    : connectTcp(Number(port), hostname);
}

/**
 * Sends `request` on a new connection, never ends its side, and reads until the server closes the
 * connection: a server that leaves it open fails the test after a while.
 */
function exchange(origin: string, request: string | Buffer, options: { ca?: Buffer } = {}) {
  return readUntilClosed(open(origin, options.ca), (socket) => socket.write(request));
}

function readUntilClosed(socket: Socket, start: (socket: Socket) => void): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server left the connection open; it sent: ${Buffer.concat(chunks)}`));
    }, 15_000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    // A reset after the answer (the server closing with bytes unread) still ends the exchange.
    socket.on('error', () => {});
    socket.once('close', () => {
      clearTimeout(giveUp);
      resolve(parseAnswer(Buffer.concat(chunks).toString('utf8')));
    });
    socket.once(socket instanceof TLSSocket ? 'secureConnect' : 'connect', () => start(socket));
  });
}

/** The first response in `raw` (status line, headers, body by Content-Length or chunks). */
function parseAnswer(raw: string): Answer {
  const headEnd = raw.indexOf('\r\n\r\n');
  if (headEnd === -1) return { raw, status: 0, headers: {}, body: '', json: undefined };
  const [statusLine = '', ...lines] = raw.slice(0, headEnd).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = raw.slice(headEnd + 4);
  if (headers['content-length'] !== undefined) {
    body = Buffer.from(body).subarray(0, Number(headers['content-length'])).toString('utf8');
  } else if (headers['transfer-encoding'] === 'chunked') {
    body = dechunk(body);
  }
  let json: any;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { raw, status: Number(statusLine.split(' ')[1]), headers, body, json };
}

function dechunk(text: string): string {
  let out = '';
  let rest = text;
  for (;;) {
    const lineEnd = rest.indexOf('\r\n');
    const size = Number.parseInt(rest.slice(0, lineEnd), 16);
    if (!(size > 0)) return out;
    out += rest.slice(lineEnd + 2, lineEnd + 2 + size);
    rest = rest.slice(lineEnd + 2 + size + 2);
  }
}

/** The contract's error body, as JSON, with the connection closed after it. */
function expectClosingError(answer: Answer, status: number, code: string) {
  expect({ status: answer.status, code: answer.json?.error?.code }, answer.raw).toEqual({ status, code });
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(answer.json)).toEqual(['error']);
  expect(Object.keys(answer.json.error)).toEqual(['code', 'message']);
  expect(answer.json.error.message.length).toBeGreaterThan(0);
  expect(answer.headers.connection?.toLowerCase()).toBe('close');
}

const problems = (lines: Record<string, unknown>[]) => lines.filter((line) => (line.level as number) >= 40);

const BIG = 'a'.repeat(20_000);

/** Requests Node's parser, or the adapter under the app, cannot read: each answers 400 or 431. */
const MALFORMED: [name: string, request: string | Buffer, status: number, code: string][] = [
  [
    'a backslash in the path',
    'GET /v1\\shipments HTTP/1.1\r\nHost: localhost\r\n\r\n',
    400,
    'invalid_request',
  ],
  [
    'a space in a header name',
    'GET /healthz HTTP/1.1\r\nHost: localhost\r\nBad Header: y\r\n\r\n',
    400,
    'invalid_request',
  ],
  ['a space before the colon', 'GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n', 400, 'invalid_request'],
  [
    'a NUL in a header value',
    'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: a\0b\r\n\r\n',
    400,
    'invalid_request',
  ],
  [
    'a folded header line',
    'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: a\r\n b\r\n\r\n',
    400,
    'invalid_request',
  ],
  ['a request line that is not one', 'GARBAGE\r\n\r\n', 400, 'invalid_request'],
  ['an unknown method', 'FROB /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n', 400, 'invalid_request'],
  ['HTTP/1.2', 'GET /healthz HTTP/1.2\r\nHost: localhost\r\n\r\n', 400, 'invalid_request'],
  ['bare LF line ends', 'GET /healthz HTTP/1.1\nHost: x\n\n', 400, 'invalid_request'],
  ['a target without a slash', 'GET healthz HTTP/1.1\r\nHost: localhost\r\n\r\n', 400, 'invalid_request'],
  ['an asterisk target', 'GET * HTTP/1.1\r\nHost: localhost\r\n\r\n', 400, 'invalid_request'],
  [
    'an unparsable absolute target',
    'GET http://[::1 HTTP/1.1\r\nHost: localhost\r\n\r\n',
    400,
    'invalid_request',
  ],
  [
    'a raw UTF-8 byte in the path',
    Buffer.from('GET /v1/é HTTP/1.1\r\nHost: localhost\r\n\r\n'),
    400,
    'invalid_request',
  ],
  ['no Host header in HTTP/1.1', 'GET /healthz HTTP/1.1\r\n\r\n', 400, 'invalid_request'],
  ['a Host with a space', 'GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n', 400, 'invalid_request'],
  ['a Host with a path', 'GET /healthz HTTP/1.1\r\nHost: x/y\r\n\r\n', 400, 'invalid_request'],
  [
    'Content-Length and Transfer-Encoding together',
    'POST /_sandbox/accounts HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    400,
    'invalid_request',
  ],
  [
    'two different Content-Lengths',
    'POST /_sandbox/accounts HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
    400,
    'invalid_request',
  ],
  [
    'a Content-Length that is not a number',
    'POST /_sandbox/accounts HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n',
    400,
    'invalid_request',
  ],
  [
    'an unknown Transfer-Encoding',
    'POST /_sandbox/accounts HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: foo\r\n\r\n',
    400,
    'invalid_request',
  ],
  [
    'a bad chunk size, after the request reached its route',
    'POST /_sandbox/accounts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
    400,
    'invalid_request',
  ],
  [
    'an oversized chunk extension',
    `POST /_sandbox/accounts HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n2;${BIG}\r\n{}\r\n0\r\n\r\n`,
    400,
    'invalid_request',
  ],
  ['the HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 400, 'invalid_request'],
  ['CONNECT', 'CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n', 400, 'invalid_request'],
  [
    'an oversized header',
    `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ${BIG}\r\n\r\n`,
    431,
    'headers_too_large',
  ],
  ['an oversized path', `GET /${BIG} HTTP/1.1\r\nHost: localhost\r\n\r\n`, 431, 'headers_too_large'],
  [
    'too many headers',
    `GET /healthz HTTP/1.1\r\nHost: localhost\r\n${Array.from({ length: 3000 }, (_, i) => `X-${i}: a`).join('\r\n')}\r\n\r\n`,
    431,
    'headers_too_large',
  ],
];

describe('requests that cannot be read, over a real socket', () => {
  const { logger, lines } = capturingLogger();
  let sandbox: RunningSandbox;
  let ca: Buffer;
  beforeAll(async () => {
    sandbox = await startServer(testConfig(), logger);
    ca = readFileSync(sandbox.certificatePath);
  });
  afterAll(() => sandbox.close());

  it.each(MALFORMED)(
    'answers %s with the contract body, then closes',
    async (_name, request, status, code) => {
      expectClosingError(await exchange(sandbox.origin, request), status, code);
    },
  );

  it.each([MALFORMED[0]!, MALFORMED[1]!, MALFORMED.find(([name]) => name === 'an oversized header')!])(
    'answers %s over HTTPS alike',
    async (_name, request, status, code) => {
      expectClosingError(await exchange(sandbox.httpsOrigin, request, { ca }), status, code);
    },
  );

  it('answers an expectation it cannot meet with 417 and the contract body, not an empty one', async () => {
    const answer = await exchange(
      sandbox.origin,
      'POST /_sandbox/accounts HTTP/1.1\r\nHost: localhost\r\nExpect: teapot\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}',
    );
    expectClosingError(answer, 417, 'expectation_failed');
    expect(answer.json.error.message).toContain('teapot');
  });

  it('keeps serving, and logged none of it as a problem of its own', async () => {
    const answer = await exchange(
      sandbox.origin,
      'GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
    );
    expect([answer.status, answer.json]).toEqual([200, { status: 'ok', database: 'sqlite' }]);
    expect(problems(lines)).toEqual([]);
    // Each refusal is there for whoever debugs a client.
    expect(lines.some((line) => line.msg === 'client connection error' && line.answer === 431)).toBe(true);
  });
});

describe('slow clients', () => {
  const { logger, lines } = capturingLogger();
  let sandbox: RunningSandbox;
  const accounts = () => sandbox.sandbox.db.value<number>('SELECT count(*) FROM accounts');
  beforeAll(async () => {
    sandbox = await startServer(testConfig(), logger, {
      transport: { headersTimeoutMs: 300, requestTimeoutMs: 600, keepAliveTimeoutMs: 300 },
    });
  });
  afterAll(() => sandbox.close());

  it('answers 408 request_timeout to a client that stops half-way through its headers', async () => {
    const answer = await exchange(
      sandbox.origin,
      'GET /v1/shipments HTTP/1.1\r\nHost: localhost\r\nAuthoriz',
    );
    expectClosingError(answer, 408, 'request_timeout');
  });

  it('answers 408 request_timeout to a client that stops half-way through its body, and writes nothing', async () => {
    const before = await accounts();
    const body = JSON.stringify({ name: 'never finished', plan: 'growth' });
    const answer = await exchange(
      sandbox.origin,
      `POST /_sandbox/accounts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    expectClosingError(answer, 408, 'request_timeout');
    // The route gave up on the body when the connection closed: quietly, at debug level.
    await vi.waitFor(() =>
      expect(lines.some((l) => l.status === 499 && l.path === '/_sandbox/accounts')).toBe(true),
    );
    expect(await accounts()).toBe(before);
    expect(problems(lines)).toEqual([]);
  });

  it('answers 408 request_timeout to a connection that never sends a byte, then closes it', async () => {
    const answer = await readUntilClosed(open(sandbox.origin), () => {});
    expectClosingError(answer, 408, 'request_timeout');
  });

  it('closes a kept-alive connection once it has been idle for the keep-alive time', async () => {
    const answer = await exchange(sandbox.origin, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    expect([answer.status, answer.json]).toEqual([200, { status: 'ok', database: 'sqlite' }]);
    expect(answer.headers.connection).toBe('keep-alive');
    // One answer, then the server closed the idle connection without another (no 408 to a request
    // nobody started).
    expect(answer.raw.match(/HTTP\/1\.1 /g)).toHaveLength(1);
  });
});

describe('the connection cap (--max-connections)', () => {
  const { logger, lines } = capturingLogger();
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startServer(testConfig({ maxConnections: 2 }), logger);
  });
  afterAll(() => sandbox.close());

  /** A connection that has had one keep-alive answer: the server has surely counted it. */
  function heldConnection(): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const socket = open(sandbox.origin);
      let received = '';
      socket.once('error', reject);
      socket.on('data', (chunk) => {
        received += chunk;
        if (received.includes('{"status":"ok","database":"sqlite"}')) resolve(socket);
      });
      socket.once('close', () => reject(new Error(`closed before an answer: ${received}`)));
      socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    });
  }

  it('refuses connections over the cap, and takes them again once one closes', async () => {
    const held = [await heldConnection(), await heldConnection()];

    const refused = await readUntilClosed(open(sandbox.origin), (socket) =>
      socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n'),
    );
    expect(refused.raw).toBe('');
    expect(lines.some((line) => line.level === 40 && line.maxConnections === 2)).toBe(true);

    held[0]!.destroy();
    await vi.waitFor(
      async () => {
        const answer = await exchange(
          sandbox.origin,
          'GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
        );
        expect(answer.status).toBe(200);
      },
      { timeout: 5_000, interval: 50 },
    );
    held[1]!.destroy();
  });
});

describe('clients that go away mid-request', () => {
  const { logger, lines } = capturingLogger();
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startServer(testConfig(), logger);
  });
  afterAll(() => sandbox.close());

  it.each([
    ['closes', (socket: Socket) => socket.destroy()],
    ['resets', (socket: Socket) => socket.resetAndDestroy()],
  ])('logs a client that %s its connection mid-body at debug level, not as an error', async (_how, leave) => {
    const socket = open(sandbox.origin);
    const body = JSON.stringify({ reference: 'never finished' });
    // Expect: 100-continue makes the server say when the request has reached the app.
    const interim = await new Promise<string>((resolve, reject) => {
      socket.once('error', reject);
      socket.once('data', (chunk) => socket.write(body.slice(0, 10), () => resolve(String(chunk))));
      socket.write(
        'POST /v1/shipments HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n' +
          `Authorization: Bearer ${DEFAULT_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
    });
    expect(interim).toMatch(/^HTTP\/1\.1 100 Continue/);
    const before = lines.length;
    leave(socket);

    await vi.waitFor(() =>
      expect(lines.slice(before).some((l) => l.status === 499 && l.path === '/v1/shipments')).toBe(true),
    );
    const line = lines.slice(before).find((l) => l.status === 499)!;
    expect(line.level).toBe(20);
    expect(problems(lines)).toEqual([]);
  });

  it('logs a client that leaves half-way through its headers at debug level', async () => {
    const socket = open(sandbox.origin);
    await new Promise<void>((resolve) =>
      socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Half', () => resolve()),
    );
    const before = lines.length;
    socket.destroy();
    await vi.waitFor(() =>
      expect(lines.slice(before).some((l) => l.msg === 'client connection error' && l.level === 20)).toBe(
        true,
      ),
    );
    expect(problems(lines)).toEqual([]);
  });
});
