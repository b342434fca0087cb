import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Pre-signed label URLs: `{cdn}/labels/<label id>.<ext>?expires=<unix seconds>&signature=<hex>`, the
 * signature an HMAC-SHA256 of `<label id>.<ext>:<expires>` under a secret made on the first start
 * and kept in the database (`url_signing_secret`), so URLs stay valid across restarts and a changed
 * byte breaks them.
 */
/** Unix seconds as the sandbox writes them: `0`, or up to twelve digits without a leading zero. */
const CANONICAL_EXPIRY = /^(?:0|[1-9]\d{0,11})$/;

export class UrlSigner {
  constructor(private readonly secret: Buffer) {}

  sign(file: string, expiresUnix: number): string {
    return createHmac('sha256', this.secret).update(`${file}:${expiresUnix}`).digest('hex');
  }

  url(cdnBase: string, file: string, expiresUnix: number): string {
    return `${cdnBase}/labels/${file}?expires=${expiresUnix}&signature=${this.sign(file, expiresUnix)}`;
  }

  /**
   * Whether the signature is the one this sandbox made for `file` and `expires` (compared in constant
   * time). `expires` must be written as the URL wrote it, in decimal digits without a sign, a leading
   * zero, a fraction or an exponent: `0001795770540` or `1.79577054e9` names the same instant, but is
   * not the URL that was signed.
   */
  verify(file: string, expires: string | undefined, signature: string | undefined): boolean {
    if (!expires || !signature || !CANONICAL_EXPIRY.test(expires) || !/^[0-9a-f]{64}$/.test(signature))
      return false;
    const expected = Buffer.from(this.sign(file, Number(expires)), 'hex');
    return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
  }
}
