import { createHmac } from 'node:crypto';

/**
 * The specification's signature: `sha256=` and the lowercase hex HMAC-SHA256 of the exact bytes sent,
 * keyed with the webhook's secret (GitHub's `X-Hub-Signature-256` scheme, so its libraries verify it).
 */
export function signatureHeader(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}
