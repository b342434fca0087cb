/** One request as the fuzzer sends it, and as a finding shows it to be sent again. */
export interface FuzzRequest {
  method: string;
  /** The path and query, encoded as they go on the wire. */
  target: string;
  headers: Record<string, string>;
  /** The body's exact bytes (invalid UTF-8 included), or none. */
  body?: Uint8Array<ArrayBuffer>;
  /** What the request tries, in a few words: `missing field`, `revoked key`. */
  variant: string;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/** No answer at all: the connection was refused, reset or timed out. */
export class NoAnswer extends Error {}

/** Sends one request over a real socket and reads the whole answer. */
export async function send(origin: string, request: FuzzRequest, timeoutMs = 30_000): Promise<Answer> {
  let response: Response;
  try {
    response = await fetch(`${origin}${request.target}`, {
      method: request.method,
      headers: request.headers,
      // Bytes rather than text: fetch would otherwise add `Content-Type: text/plain` to a body sent
      // without one on purpose.
      ...(request.body ? { body: request.body } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new NoAnswer(describeFailure(error));
  }
  let text: string;
  try {
    text = await readAnswer(response);
  } catch (error) {
    throw new NoAnswer(`the answer was cut off: ${describeFailure(error)}`);
  }
  return { status: response.status, headers: response.headers, text };
}

/**
 * The answer's text. A stream of server-sent events (`GET /_sandbox/requests/stream`) never ends: its
 * first chunk stands for it, and the stream is closed.
 */
async function readAnswer(response: Response): Promise<string> {
  const mediaType = response.headers.get('content-type')?.split(';')[0]?.trim();
  if (mediaType !== 'text/event-stream' || !response.body) return response.text();
  const reader = response.body.getReader();
  const first = await reader.read();
  await reader.cancel();
  return first.value ? new TextDecoder().decode(first.value) : '';
}

function describeFailure(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return [String((error as Error).message ?? error), cause?.code ?? cause?.message]
    .filter(Boolean)
    .join(': ');
}

const utf8 = new TextEncoder();

/** A JSON request of the fuzzer's own (setting up an account), not a fuzzed one. */
export function jsonRequest(method: string, target: string, key: string | null, body?: unknown): FuzzRequest {
  return {
    method,
    target,
    headers: {
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: utf8.encode(JSON.stringify(body)) }),
    variant: 'setup',
  };
}

export const encodeUtf8 = (text: string) => utf8.encode(text);

/** The body as text for a report: UTF-8 when it is, else its bytes in hex. */
export function bodyText(body: Uint8Array | undefined): string | undefined {
  if (!body) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return `<bytes ${Buffer.from(body).toString('hex')}>`;
  }
}
