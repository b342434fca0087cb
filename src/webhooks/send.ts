import { signatureHeader } from './signature.js';

export type DeliveryErrorKind = 'timeout' | 'connection' | 'http';

export interface DeliveryResult {
  ok: boolean;
  responseStatus: number | null;
  responseExcerpt: string | null;
  durationMs: number;
  error: DeliveryErrorKind | null;
  errorMessage: string | null;
}

const EXCERPT_CHARS = 500;

/**
 * One HTTP try of one delivery: `POST` of the exact bytes with the contract's headers. Only a 2xx
 * counts as delivered; redirects are not followed (a receiver that moved must be re-registered).
 * The timeout is real time, whatever the account's clock speed.
 */
export async function sendDelivery(request: {
  url: string;
  secret: string;
  body: string;
  eventId: string;
  attempt: number;
  timeoutMs: number;
}): Promise<DeliveryResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const response = await fetch(request.url, {
      method: 'POST',
      redirect: 'manual',
      signal: AbortSignal.timeout(request.timeoutMs),
      headers: {
        'content-type': 'application/json',
        'user-agent': 'ShippingSandbox-Webhooks/1.0',
        'service-signature': signatureHeader(request.secret, request.body),
        'service-event-id': request.eventId,
        'service-delivery-attempt': String(request.attempt),
      },
      body: request.body,
    });
    const text = await response.text();
    const ok = response.status >= 200 && response.status < 300;
    return {
      ok,
      responseStatus: response.status,
      responseExcerpt: text.slice(0, EXCERPT_CHARS),
      durationMs: elapsed(),
      error: ok ? null : 'http',
      errorMessage: ok ? null : `the receiver answered ${response.status}`,
    };
  } catch (error) {
    const timedOut = (error as Error).name === 'TimeoutError' || (error as Error).name === 'AbortError';
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return {
      ok: false,
      responseStatus: null,
      responseExcerpt: null,
      durationMs: elapsed(),
      error: timedOut ? 'timeout' : 'connection',
      errorMessage: timedOut
        ? `no answer within ${request.timeoutMs} ms`
        : (cause?.code ?? cause?.message ?? (error as Error).message),
    };
  }
}
