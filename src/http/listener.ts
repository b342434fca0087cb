import {
  createServer as createHttpServer,
  type IncomingMessage,
  maxHeaderSize,
  type Server,
  type ServerOptions,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { getRequestListener, RequestError } from '@hono/node-server';
import type { Logger } from 'pino';
import { ApiError } from '../core/errors.js';
import { type ConnectionsPerClient, gateConnections } from './connections.js';

/**
 * Node's HTTP server under the Hono app: how long a client may take, how many may be connected, and
 * the contract's error body for every request that never reaches the app (one Node's parser refuses,
 * one the adapter cannot make a URL of, one too slow to arrive). Everything here happens around a
 * request rather than inside one: what the app itself reaches past Hono for is in node-adapter.ts.
 */

/** How long a client may take, and how many may be connected at once: each listener's own. */
export interface TransportLimits {
  /** From a request's first byte (a new connection's opening) to the end of its headers. */
  headersTimeoutMs: number;
  /** From a request's first byte (a new connection's opening) to the end of its body. */
  requestTimeoutMs: number;
  /** How long a connection stays open without a request, between two of them. */
  keepAliveTimeoutMs: number;
  /** How long a client may take over the TLS handshake (HTTPS). */
  tlsHandshakeTimeoutMs: number;
  /** Open connections accepted at once (`--max-connections`); more are closed as they arrive. */
  maxConnections: number;
}

/**
 * A sandbox's clients sit on the same host or in the same CI cluster, where headers arrive within
 * milliseconds and a 1 MiB body within a second. Ten seconds for the headers and thirty for the whole
 * request leave a hundredfold margin for a loaded runner, and keep a stalled or hostile client from
 * holding a connection for minutes (Node's own limits are 60 s and 300 s, checked every 30 s; these
 * are checked every second); a client past them gets 408 request_timeout. Five seconds of keep-alive
 * is Node's default: enough to reuse a connection across a test's calls, short enough that idle ones
 * do not pile up against the cap. A TLS handshake gets ten seconds too (Node's own: 120 s).
 */
export const TRANSPORT_TIMEOUTS = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  tlsHandshakeTimeoutMs: 10_000,
} as const satisfies Omit<TransportLimits, 'maxConnections'>;

/** After an error answer, how long a client that does not close its end may keep the connection. */
const LINGER_MS = 1_000;

export interface ListenerOptions {
  fetch: Parameters<typeof getRequestListener>[0];
  /** The host the adapter puts in URLs of requests without a `Host` header (HTTP/1.0). */
  hostname: string;
  /** Serve HTTPS with this certificate and key; plain HTTP without. */
  tls?: { cert: string; key: string } | undefined;
  limits: TransportLimits;
  /** The open connections of each client address, shared by the listeners of one sandbox. */
  clients?: ConnectionsPerClient | undefined;
  logger: Logger;
}

/** An HTTP or HTTPS server for the app, not yet listening. */
export function createListener({ fetch, hostname, tls, limits, clients, logger }: ListenerOptions): Server {
  const handle = getRequestListener(fetch, {
    hostname,
    errorHandler: (error) => jsonResponse(adapterError(error, logger)),
  });
  // The latest response of each connection, so a parse error can tell whether an answer is on the
  // wire (a client that pipelines requests may still see an earlier answer cut short).
  const responses = new WeakMap<Duplex, ServerResponse>();
  const onRequest = (incoming: IncomingMessage, outgoing: ServerResponse) => {
    responses.set(incoming.socket, outgoing);
    // Node's own check of this answers an empty 400, so the server leaves it to this one.
    if (incoming.httpVersion === '1.1' && incoming.headers.host === undefined) {
      answer(outgoing, new ApiError(400, 'invalid_request', 'An HTTP/1.1 request needs a Host header.'), {
        close: true,
      });
      return;
    }
    void handle(incoming, outgoing);
  };

  const options: ServerOptions = {
    requireHostHeader: false,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // How often Node looks for requests past their time; its default of 30 s would add up to that.
    connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4))),
  };
  const server = tls
    ? createHttpsServer({ ...options, ...tls, handshakeTimeout: limits.tlsHandshakeTimeoutMs }, onRequest)
    : createHttpServer(options, onRequest);
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;

  // Node answers an expectation other than 100-continue with an empty 417 unless told otherwise.
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const expectation = request.headers.expect ?? '';
    const error = new ApiError(
      417,
      'expectation_failed',
      `The sandbox does not meet 'Expect: ${expectation}'; the only expectation it knows is 100-continue.`,
    );
    answer(response, error, { close: false });
  });

  const answered = new WeakSet<Duplex>();
  /** Writes the error as a whole response of its own on the bare socket, then closes the connection. */
  const answerAndClose = (socket: Duplex, error: ApiError) => {
    answered.add(socket);
    socket.end(rawResponse(error));
    // Closed once the client has read the answer and closed its end; one that does not is cut off.
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  };

  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // Node's parser reports a connection's later bytes again; the first answer stands.
    if (answered.has(socket)) return;
    const reply = transportError(error, limits);
    logger.debug(
      { code: error.code, reason: reasonOf(error), answer: reply?.status },
      'client connection error',
    );
    const response = responses.get(socket);
    // Half an answer already on the wire cannot be followed by another one.
    const midAnswer = response?.headersSent && !response.writableFinished;
    if (reply === undefined || !socket.writable || midAnswer) {
      socket.destroy();
      return;
    }
    answerAndClose(socket, reply);
  });

  // Without a listener Node closes a CONNECT's connection without a word; the socket is the
  // server's no more, so its errors are ignored here (a client gone is no failure).
  server.on('connect', (_request: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => {});
    const error = new ApiError(
      400,
      'invalid_request',
      'CONNECT is not supported: the sandbox is not a proxy.',
    );
    answerAndClose(socket, error);
  });

  server.on('drop', refusedConnectionWarning(logger, limits.maxConnections));
  gateConnections(server, {
    clients,
    onRefused: refusedClientWarning(logger, clients?.max),
    ...(tls
      ? {
          tls: {
            firstBytesTimeoutMs: limits.tlsHandshakeTimeoutMs,
            onPlainText: (socket) => {
              // The request is read and dropped, so that the client sees the answer, not a reset.
              socket.resume();
              answerAndClose(socket, PLAIN_HTTP_ON_HTTPS_PORT);
            },
          },
        }
      : {}),
  });
  return server;
}

const PLAIN_HTTP_ON_HTTPS_PORT = new ApiError(
  400,
  'https_port_needs_tls',
  "This is the sandbox's HTTPS port: call it with https://, or call the HTTP port with http://.",
);

const JSON_HEADERS = { 'content-type': 'application/json', 'x-content-type-options': 'nosniff' };

/** An error answered through Node's response, outside the app. */
function answer(response: ServerResponse, error: ApiError, { close }: { close: boolean }): void {
  const body = JSON.stringify(error.toBody());
  response.writeHead(error.status, {
    ...JSON_HEADERS,
    'content-length': Buffer.byteLength(body),
    ...(close ? { connection: 'close' } : {}),
  });
  response.end(body);
}

/** The answer to a connection-level error, or none when the client is gone (reset, broken pipe). */
function transportError(error: NodeJS.ErrnoException, limits: TransportLimits): ApiError | undefined {
  switch (error.code) {
    case 'ECONNRESET':
    case 'EPIPE':
      return undefined;
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(
        431,
        'headers_too_large',
        `The request line and headers are larger than the ${maxHeaderSize / 1024} KiB the sandbox reads.`,
      );
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(
        408,
        'request_timeout',
        `The request did not arrive in time: its headers must arrive within ${seconds(limits.headersTimeoutMs)} ` +
          `and the whole request within ${seconds(limits.requestTimeoutMs)}.`,
      );
    default:
      return new ApiError(400, 'invalid_request', `The request is not valid HTTP (${reasonOf(error)}).`);
  }
}

/** Node's parser names what it refused in `reason` ("Invalid header value char"). */
function reasonOf(error: NodeJS.ErrnoException): string {
  return (error as { reason?: string }).reason ?? error.message;
}

/**
 * What the adapter throws before the app sees a request: a `RequestError` when it cannot make a URL
 * of the target or the Host header (a backslash in the path, `*`, a host with a path); anything else
 * would be the sandbox's own failure.
 */
function adapterError(error: unknown, logger: Logger): ApiError {
  if (error instanceof RequestError) {
    return new ApiError(
      400,
      'invalid_request',
      `The request's target and Host header do not make a valid URL (${error.message}).`,
    );
  }
  logger.error({ err: error }, 'unexpected error');
  return new ApiError(500, 'internal_error', 'An unexpected error occurred.');
}

/** The error as the adapter's answer; the connection closes after it, as after a parser's refusal. */
function jsonResponse(error: ApiError): Response {
  return new Response(JSON.stringify(error.toBody()), {
    status: error.status,
    headers: { ...JSON_HEADERS, connection: 'close' },
  });
}

function rawResponse(error: ApiError): string {
  const body = JSON.stringify(error.toBody());
  return [
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}`,
    'Content-Type: application/json',
    'X-Content-Type-Options: nosniff',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `Date: ${new Date().toUTCString()}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

const seconds = (ms: number) => `${ms / 1000} s`;

/**
 * A warning when a client's connections are refused at its cap, at most once a minute, with how many
 * were refused since the last one and the address of the latest.
 */
function refusedClientWarning(logger: Logger, maxConnectionsPerClient: number | undefined) {
  let refused = 0;
  let quietUntil = 0;
  return (address: string) => {
    refused += 1;
    const now = Date.now();
    if (now < quietUntil) return;
    logger.warn(
      { maxConnectionsPerClient, refused, address },
      'refusing connections: a client holds --max-connections-per-client open already',
    );
    refused = 0;
    quietUntil = now + 60_000;
  };
}

/**
 * A warning when connections are refused at the cap, at most once a minute (a flood of them would
 * otherwise flood the log too), with how many were refused since the last one.
 */
function refusedConnectionWarning(logger: Logger, maxConnections: number): () => void {
  let refused = 0;
  let quietUntil = 0;
  return () => {
    refused += 1;
    const now = Date.now();
    if (now < quietUntil) return;
    logger.warn(
      { maxConnections, refused },
      'refusing connections: this listener has --max-connections open already',
    );
    refused = 0;
    quietUntil = now + 60_000;
  };
}
