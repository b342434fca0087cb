import { TLSSocket } from 'node:tls';
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ApiError } from '../core/errors.js';
import type { AppEnv } from './context.js';

/**
 * Every place the sandbox reaches past Hono to Node's own request and response, each for a measured
 * reason. Hono's Node adapter binds them as `c.env.incoming` / `c.env.outgoing` (its documented
 * `HttpBindings`); in-process calls (`app.request`) have neither, and each helper falls back to Hono's
 * own way, so both paths answer alike.
 */

type NodeContext = Context<AppEnv>;

/**
 * The request body as text, at most `max` bytes (`undefined` when larger), read straight from Node's
 * socket. Through Hono the adapter builds a web `Request`, with its AbortSignal, for the body: a tenth
 * of the cost of a whole API call. A client that goes away before its body is in (it closed the
 * connection, or the server cut it off for sending too slowly) gets `clientClosedRequest`.
 */
export function readBodyText(c: NodeContext, max: number): Promise<string | undefined> {
  const incoming = c.env?.incoming;
  return incoming ? readCapped(incoming, max) : readThroughHono(c, max);
}

/** Each request's body as read, and parsed, by the sandbox: for the steps that take it as it is. */
const bodies = new WeakMap<NodeContext, { text: string; parsed?: { value: unknown } }>();

/**
 * Hands the body text, read once from the socket, to Hono: `c.req.text()` answers it from Hono's body
 * cache. The cache holds promises at run time although its type names the resolved values, hence the
 * cast.
 */
export function handBodyTextToHono(c: NodeContext, text: string): void {
  (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(text);
  bodies.set(c, { text });
}

/**
 * Hands the body, parsed once by the sandbox, to Hono's validators: `c.req.json()` would parse the
 * cached text again for every validator, so for this request it answers the parsed value.
 */
export function handParsedBodyToHono(c: NodeContext, text: string, parsed: unknown): void {
  handBodyTextToHono(c, text);
  c.req.json = <T>() => Promise.resolve(parsed as T);
  (bodies.get(c) as { parsed?: { value: unknown } }).parsed = { value: parsed };
}

/** The body text handed to Hono, at once (Hono's `c.req.text()` answers it through a promise). */
export const bodyTextOf = (c: NodeContext): string | undefined => bodies.get(c)?.text;

/** The parsed body handed to Hono's validators, at once; undefined when none was. */
export const parsedBodyOf = (c: NodeContext): { value: unknown } | undefined => bodies.get(c)?.parsed;

async function readThroughHono(c: NodeContext, max: number): Promise<string | undefined> {
  const bytes = new Uint8Array(await c.req.raw.arrayBuffer());
  return bytes.byteLength > max ? undefined : new TextDecoder().decode(bytes);
}

function readCapped(incoming: NonNullable<AppEnv['Bindings']['incoming']>, max: number) {
  return new Promise<string | undefined>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        stopListening();
        // Drained, not read: the answer can still go out on this connection.
        incoming.resume();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      stopListening();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    // Node reports a connection lost mid-body as an `aborted` error, then `close`. `close` also comes
    // after a body that arrived whole, once the answer is sent: by then nothing listens, so no error
    // (with its stack trace) is made for a request that went well.
    const onLost = () => {
      stopListening();
      reject(clientClosedRequest());
    };
    function stopListening() {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onLost);
      incoming.off('close', onLost);
    }
    incoming.on('data', onData);
    incoming.once('end', onEnd);
    incoming.once('error', onLost);
    incoming.once('close', onLost);
  });
}

/**
 * The client left before its request was read. Nobody is there to answer and nothing went wrong in
 * the sandbox, so it is an ApiError (never logged as an unexpected error) with nginx's 499, which
 * only the debug request log shows.
 */
export const clientClosedRequest = () =>
  new ApiError(499, 'client_closed_request', 'The client closed the connection before its request was read.');

/**
 * Sets headers on whatever the request ends up answering, success or error, before the route has
 * answered. On Node's server they go straight onto Node's response, which merges them into the
 * headers the route sends; Hono's `c.header` turns each answer's headers into a web `Headers` object,
 * measured at 12 µs a request.
 */
export function presetHeaders(c: NodeContext, headers: Readonly<Record<string, string>>): void {
  const outgoing = c.env?.outgoing;
  for (const name in headers) {
    const value = headers[name] as string;
    if (outgoing) outgoing.setHeader(name, value);
    else c.header(name, value);
  }
}

/** Answers built by `answerApiJsonText` on Node's server: already in the form API answers go out in. */
const inApiWireForm = new WeakSet<Response>();

/**
 * JSON text as the answer to an API request, in the form every API answer has gone out in: the
 * request journal reads each answer's headers, which turns them into a web `Headers` object that the
 * adapter copies back out lower-cased, with the length written out after them. Built in that form
 * here, on Node's server, the answer is marked so that the journal leaves its headers alone: the round
 * trip through `Headers` was measured at 9 µs a request. In-process calls get Hono's own answer.
 */
export function answerApiJsonText(c: NodeContext, text: string, status: ContentfulStatusCode): Response {
  // Hono answers HEAD by copying the GET's answer into a bodiless one, whose length is none of ours.
  if (!c.env?.outgoing || c.req.method === 'HEAD')
    return c.body(text, status, { 'content-type': 'application/json' });
  const response = new Response(text, {
    status,
    headers: { 'content-type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) },
  });
  inApiWireForm.add(response);
  return response;
}

/** Whether `answerApiJsonText` built the answer: its headers need no reading (they hold no Retry-After). */
export const isInApiWireForm = (response: Response): boolean => inApiWireForm.has(response);

/** Cuts the connection without an answer (an injected fault). In-process there is nothing to cut. */
export function dropConnection(c: NodeContext): void {
  c.env?.incoming?.socket.destroy();
}

/**
 * Whether the request reached this server over TLS. The socket decides, never the request's URL:
 * the adapter takes the scheme of an absolute-form request line (`GET https://… HTTP/1.1`) as the
 * client wrote it. In-process calls count as plain HTTP.
 */
export function arrivedOverTls(c: NodeContext): boolean {
  const socket = c.env?.incoming?.socket;
  return socket instanceof TLSSocket && socket.encrypted;
}
