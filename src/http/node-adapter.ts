import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import { TLSSocket } from 'node:tls';
import type { Context } from 'hono';
import { ApiError } from '../core/errors.js';
import type { AppEnv } from './context.js';

/**
 * Every place the sandbox reaches past Hono's request and response to Node's own. Hono's Node adapter
 * binds them as `c.env.incoming` / `c.env.outgoing` (its documented `HttpBindings`); in-process calls
 * (`app.request`) have neither, and each helper falls back to Hono's own way, so both answer alike.
 */

type NodeContext = Context<AppEnv>;

/**
 * The request body as text, at most `max` bytes (`undefined` when larger), refused as it streams in.
 * A client that goes away before its body is in gets `clientClosedRequest`.
 *
 * From Node's request itself when there is one: the web stream Hono's adapter would wrap around it
 * (a `ReadableStream` and a `Request` for each body) was the largest cost a creation paid for going
 * through Hono (docs/benchmark.md). In-process calls read Hono's request.
 */
export async function readBodyText(c: NodeContext, max: number): Promise<string | undefined> {
  const incoming = c.env?.incoming;
  if (incoming) return readNodeBody(incoming, max);
  const body = c.req.raw.body;
  if (!body) return '';
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > max) {
        await reader.cancel().catch(() => undefined);
        return undefined;
      }
      chunks.push(value);
    }
  } catch {
    throw clientClosedRequest();
  }
  return utf8Text(Buffer.concat(chunks));
}

function readNodeBody(
  incoming: IncomingMessage | Http2ServerRequest,
  max: number,
): Promise<string | undefined> {
  if (incoming.readableEnded) return Promise.resolve('');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('close', onClose);
      incoming.off('error', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      // Drained, not kept: the answer can still go out on this connection.
      done();
      incoming.resume();
      resolve(undefined);
    };
    const onEnd = () => {
      done();
      try {
        resolve(utf8Text(Buffer.concat(chunks)));
      } catch (error) {
        reject(error);
      }
    };
    const onClose = () => {
      done();
      reject(clientClosedRequest());
    };
    incoming.on('data', onData);
    incoming.once('end', onEnd);
    incoming.once('close', onClose);
    incoming.once('error', onClose);
  });
}

/**
 * The body's bytes as text. JSON is UTF-8 (RFC 8259): bytes that are not (Latin-1 text, say) are
 * refused rather than read with U+FFFD in their place, which would store text the client never sent.
 */
function utf8Text(bytes: Buffer): string {
  if (!isUtf8(bytes))
    throw new ApiError(400, 'invalid_json', 'The request body is not valid UTF-8, which JSON must be.');
  return bytes.toString('utf8');
}

/**
 * The client left before its request was read. Nobody is there to answer and nothing went wrong in
 * the sandbox, so it is an ApiError (never logged as an unexpected error) with nginx's 499, which
 * only the debug request log shows.
 */
export const clientClosedRequest = () =>
  new ApiError(499, 'client_closed_request', 'The client closed the connection before its request was read.');

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
