import { setTimeout as sleep } from 'node:timers/promises';
import type { Answer } from './compare.js';

export interface HttpCall {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Follow redirects (a label's file may be served from elsewhere); an API call's answer is its own. */
  followRedirects: boolean;
}

/** How long a `429`'s `Retry-After` may ask the script to wait, and how often, before its answer stands. */
const RETRY_AFTER_LIMIT_SECONDS = 60;
const RETRIES_AFTER_429 = 2;

/**
 * Makes one call and reads its whole answer. A `429` with a `Retry-After` of at most a minute is waited
 * out and the call made again (twice at most), as a well-behaved client does: a busy target is not a
 * difference. A call with no answer (refused, reset, too slow) resolves with `status: null` and why.
 */
export async function send(request: HttpCall, timeoutMs: number): Promise<Answer> {
  for (let attempt = 0; ; attempt++) {
    const answer = await sendOnce(request, timeoutMs);
    const wait = Number(answer.headers.get('retry-after'));
    if (
      answer.status !== 429 ||
      attempt === RETRIES_AFTER_429 ||
      !Number.isInteger(wait) ||
      wait < 0 ||
      wait > RETRY_AFTER_LIMIT_SECONDS
    )
      return answer;
    await sleep(wait * 1000);
  }
}

async function sendOnce(request: HttpCall, timeoutMs: number): Promise<Answer> {
  try {
    const response = await fetch(request.url, {
      method: request.method,
      // A connection of its own for each call. A kept-alive one can be closed by the server, idle, at
      // the moment the next call goes out on it, and that call dies with ECONNRESET: a flaw of the
      // client's, which would show as a difference. Connections are not compared anyway.
      headers: { ...request.headers, connection: 'close' },
      body: request.body,
      redirect: request.followRedirects ? 'follow' : 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const bytes = new Uint8Array(await response.arrayBuffer());
    return { status: response.status, headers: response.headers, bytes, json: parseJson(bytes) };
  } catch (error) {
    return {
      status: null,
      failure: failureOf(error, timeoutMs),
      headers: new Headers(),
      bytes: new Uint8Array(),
    };
  }
}

function parseJson(bytes: Uint8Array): unknown {
  if (bytes.length === 0) return undefined;
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return undefined;
  }
}

/** Why a call got no answer, in a few words: `connect ECONNREFUSED 127.0.0.1:4010`, `no answer within 30 s`. */
function failureOf(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && error.name === 'TimeoutError')
    return `no answer within ${Math.round(timeoutMs / 1000)} s`;
  const cause = (error as { cause?: { message?: string; code?: string } }).cause;
  return cause?.message ?? cause?.code ?? (error as Error).message ?? String(error);
}
