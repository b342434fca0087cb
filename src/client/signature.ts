import { createHmac, timingSafeEqual } from 'node:crypto';

/** `sha256=` and 64 lowercase hex digits, as the sandbox sends it. */
const SIGNATURE = /^sha256=([0-9a-f]{64})$/;

/**
 * Whether a webhook delivery is genuine: `header` (`Service-Signature`) must be `sha256=` and the
 * lowercase hex HMAC-SHA256 of `rawBody`, keyed with the webhook's secret. Compared in constant time.
 *
 * Pass the body exactly as it arrived (the string or the bytes, before any JSON parsing: re-serialising
 * parsed JSON changes the bytes). A missing header (`null`, `undefined`, or a header sent twice) is
 * `false`. Node's `crypto`: it runs on the server that receives the webhooks, and answers at once.
 */
export function verifySignature(
  rawBody: string | Uint8Array | ArrayBuffer,
  header: string | readonly string[] | null | undefined,
  secret: string,
): boolean {
  if (typeof secret !== 'string' || secret === '') {
    throw new TypeError("verifySignature needs the webhook's secret, a non-empty string");
  }
  const value = typeof header === 'string' ? header : header?.length === 1 ? header[0] : undefined;
  const hex = value === undefined ? undefined : SIGNATURE.exec(value.trim())?.[1];
  if (hex === undefined) return false;
  const expected = createHmac('sha256', secret).update(bytesOf(rawBody)).digest();
  return timingSafeEqual(expected, Buffer.from(hex, 'hex'));
}

function bytesOf(rawBody: unknown): Uint8Array {
  if (typeof rawBody === 'string') return Buffer.from(rawBody, 'utf8');
  if (rawBody instanceof Uint8Array) return rawBody;
  if (rawBody instanceof ArrayBuffer) return new Uint8Array(rawBody);
  throw new TypeError(
    'verifySignature needs the raw body as it arrived (a string, a Buffer or an ArrayBuffer), not parsed ' +
      'JSON: the signature covers the exact bytes sent',
  );
}
