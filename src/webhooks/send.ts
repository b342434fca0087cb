import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import { attemptRefusal, type DestinationPolicy } from './destinations.js';
import { signatureHeader } from './signature.js';

export type DeliveryErrorKind = 'timeout' | 'connection' | 'http' | 'destination_not_allowed';

export interface DeliveryResult {
  ok: boolean;
  /** What went on the wire (the URL, and the signature of the body): absent when nothing was sent. */
  sent?: { url: string; signature: string };
  responseStatus: number | null;
  responseExcerpt: string | null;
  durationMs: number;
  error: DeliveryErrorKind | null;
  errorMessage: string | null;
}

/** One address a host name resolves to. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Every address a host name resolves to, in the order to try them. */
export type ResolveHost = (hostname: string) => Promise<ResolvedAddress[]>;

/**
 * How much of a receiver's answer is read: past this the connection is closed, so a receiver that
 * answers without end costs one buffer, not the sandbox's memory.
 */
export const MAX_ANSWER_BYTES = 64 * 1024;
/** How much of the answer the delivery log keeps, in bytes (whole UTF-8 characters only). */
export const EXCERPT_BYTES = 1024;

export interface DeliveryRequest {
  url: string;
  secret: string;
  body: string;
  eventId: string;
  attempt: number;
  timeoutMs: number;
  /** A probe's delivery: sent with `Service-Probe: true`, so a receiver can tell it from real traffic. */
  probe?: boolean;
  /** Aborted when the sandbox stops before the answer came: the send is cut off, with no outcome. */
  cutOff?: AbortSignal;
  /** False to take any certificate (`listen --skip-verify`, forwarding to a self-signed local server). */
  verifyTls?: boolean;
}

/** A send the sandbox cut off as it stopped: it has no outcome, and is sent again at the next start. */
export const CUT_OFF = 'cut off';

export interface DeliveryTransport {
  destinations: DestinationPolicy;
  resolve: ResolveHost;
}

class DeadlinePassed extends Error {}

/**
 * One HTTP try of one delivery: `POST` of the exact bytes with the contract's headers. Only a 2xx
 * counts as delivered; redirects are not followed (a receiver that moved must be re-registered).
 * The timeout is real time, whatever the account's clock speed, and covers resolving the host,
 * connecting and the whole answer.
 *
 * Before connecting, the host's addresses are resolved (all of them) and each is checked against the
 * destination policy; if any is refused nothing is sent. The connection then goes to a checked
 * address itself (the request's `lookup` answers with the checked addresses), so a name cannot
 * resolve to something else between the check and the connection. TLS still verifies the
 * certificate for the host name of the URL.
 */
export async function sendDelivery(
  request: DeliveryRequest,
  transport: DeliveryTransport,
): Promise<DeliveryResult | typeof CUT_OFF> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const failure = (error: DeliveryErrorKind, errorMessage: string, responseStatus: number | null = null) => ({
    ok: false,
    responseStatus,
    responseExcerpt: null,
    durationMs: elapsed(),
    error,
    errorMessage,
  });
  const timedOut = `no answer within ${request.timeoutMs} ms`;
  const deadline = started + request.timeoutMs;

  const url = new URL(request.url);
  let destination: { addresses: ResolvedAddress[] } | { refused: string };
  try {
    destination = await beforeDeadline(checkedDestination(url, transport), deadline);
  } catch (error) {
    if (error instanceof DeadlinePassed) return failure('timeout', `${timedOut} (resolving ${url.hostname})`);
    const code = (error as { code?: string }).code;
    return failure('connection', code ?? (error as Error).message);
  }
  if ('refused' in destination) return failure('destination_not_allowed', destination.refused);

  const headers = deliveryHeaders(url, request, signatureHeader(request.secret, request.body));
  const answer = await post(url, destination.addresses, headers, request, deadline - performance.now());
  const sent = { url: request.url, signature: headers['service-signature'] };
  if (answer.kind === 'cut off') return CUT_OFF;
  if (answer.kind === 'timeout') return { ...failure('timeout', timedOut, answer.status), sent };
  if (answer.kind === 'connection') return { ...failure('connection', answer.message, answer.status), sent };
  const ok = answer.status >= 200 && answer.status < 300;
  const redirect = answer.status >= 300 && answer.status < 400;
  return {
    ok,
    sent,
    responseStatus: answer.status,
    responseExcerpt: answer.excerpt,
    durationMs: elapsed(),
    error: ok ? null : 'http',
    errorMessage: ok
      ? null
      : `the receiver answered ${answer.status}${redirect ? ' (redirects are not followed)' : ''}`,
  };
}

/**
 * The headers of a delivery, in the order they are sent: the contract's three, and what HTTP needs.
 * The delivery log shows an attempt's request with these same headers.
 */
export function deliveryHeaders(
  url: URL,
  request: Pick<DeliveryRequest, 'body' | 'eventId' | 'attempt' | 'probe'>,
  signature: string,
) {
  return {
    host: url.host,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(request.body)),
    'user-agent': 'ShippingSandbox-Webhooks/1.0',
    'service-signature': signature,
    'service-event-id': request.eventId,
    'service-delivery-attempt': String(request.attempt),
    ...(request.probe ? { 'service-probe': 'true' } : {}),
  };
}

/** The URL's host checked as written, then every address it resolves to; or why it is refused. */
async function checkedDestination(
  url: URL,
  { destinations, resolve }: DeliveryTransport,
): Promise<{ addresses: ResolvedAddress[] } | { refused: string }> {
  const refusal = destinations.checkHost(url.hostname);
  if (refusal) return { refused: attemptRefusal(url.hostname, refusal) };
  const host = bareHost(url);
  const family = isIP(host);
  if (family !== 0) return { addresses: [{ address: host, family }] };
  const addresses = await resolve(host);
  if (addresses.length === 0) throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' });
  if (!destinations.isAllowListed(url.hostname)) {
    for (const { address } of addresses) {
      const refused = destinations.checkAddress(address);
      if (refused) return { refused: attemptRefusal(host, refused) };
    }
  }
  return { addresses };
}

type Answer =
  | { kind: 'cut off' }
  | { kind: 'answered'; status: number; excerpt: string }
  | { kind: 'timeout'; status: number | null }
  | { kind: 'connection'; message: string; status: number | null };

/** The POST itself, to the checked addresses only, reading at most MAX_ANSWER_BYTES of the answer. */
function post(
  url: URL,
  addresses: ResolvedAddress[],
  headers: Record<string, string>,
  request: DeliveryRequest,
  remainingMs: number,
): Promise<Answer> {
  return new Promise<Answer>((resolve) => {
    const secure = url.protocol === 'https:';
    let status: number | null = null;
    let settled = false;
    const finish = (answer: Answer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.cutOff?.removeEventListener('abort', cutOff);
      resolve(answer);
    };
    const cutOff = () => {
      finish({ kind: 'cut off' });
      outgoing.destroy();
    };

    const send = secure ? httpsRequest : httpRequest;
    const outgoing = send({
      host: bareHost(url),
      port: url.port || (secure ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      // A connection of its own, closed after the answer: no idle connection outlives the send, so
      // a stopped sandbox holds no socket and every send connects to the address it just checked.
      agent: false,
      lookup: pinnedLookup(addresses),
      headers,
      ...(request.verifyTls === false ? { rejectUnauthorized: false } : {}),
    });
    const timer = setTimeout(
      () => {
        finish({ kind: 'timeout', status });
        outgoing.destroy();
      },
      Math.max(0, remainingMs),
    );

    if (request.cutOff?.aborted) queueMicrotask(cutOff);
    else request.cutOff?.addEventListener('abort', cutOff, { once: true });

    outgoing.on('error', (error: Error & { code?: string }) => {
      finish({ kind: 'connection', message: error.code ?? error.message, status });
    });
    outgoing.on('response', (response: IncomingMessage) => {
      status = response.statusCode ?? 0;
      readAnswer(response, (excerpt, complete) => {
        if (complete === 'closed early') {
          finish({ kind: 'connection', message: 'the connection closed before the answer ended', status });
          return;
        }
        finish({ kind: 'answered', status: status ?? 0, excerpt });
        // Enough was read: the rest of the answer is refused by closing the connection.
        if (complete === 'cut') outgoing.destroy();
      });
    });
    outgoing.end(request.body);
  });
}

/**
 * Reads the answer up to MAX_ANSWER_BYTES, keeping the first EXCERPT_BYTES: `done` is told whether
 * the answer ended, was cut at the limit, or the connection closed before its end.
 */
function readAnswer(
  response: IncomingMessage,
  done: (excerpt: string, how: 'ended' | 'cut' | 'closed early') => void,
): void {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let readBytes = 0;
  let finished = false;
  const finish = (how: 'ended' | 'cut' | 'closed early') => {
    if (finished) return;
    finished = true;
    done(new StringDecoder('utf8').write(Buffer.concat(kept)), how);
  };
  response.on('data', (chunk: Buffer) => {
    if (finished) return;
    readBytes += chunk.length;
    if (keptBytes < EXCERPT_BYTES) {
      const part = chunk.subarray(0, EXCERPT_BYTES - keptBytes);
      kept.push(part);
      keptBytes += part.length;
    }
    if (readBytes >= MAX_ANSWER_BYTES) {
      finish('cut');
      response.destroy();
    }
  });
  response.on('end', () => finish('ended'));
  response.on('error', () => finish('closed early'));
  response.on('close', () => finish('closed early'));
}

/**
 * The connection's own name lookup, answering with the addresses already checked: whatever the
 * name resolves to by now, the socket connects to one of these (all of them when Node tries each
 * family in turn).
 */
function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const wanted = options.family === 4 || options.family === 6 ? options.family : 0;
    const usable = addresses.filter((entry) => wanted === 0 || entry.family === wanted);
    const first = usable[0];
    if (!first) {
      const error = Object.assign(new Error('no checked address of the wanted family'), {
        code: 'ENOTFOUND',
      });
      callback(error as NodeJS.ErrnoException, '', 0);
    } else if (options.all) callback(null, usable as never);
    else callback(null, first.address, first.family);
  };
}

/** The URL's host without the brackets of an IPv6 literal, as sockets take it. */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

function beforeDeadline<T>(work: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const passed = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new DeadlinePassed()), Math.max(0, deadline - performance.now()));
  });
  return Promise.race([work, passed]).finally(() => clearTimeout(timer));
}
