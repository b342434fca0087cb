/**
 * Text as both database engines can hold it alike. PostgreSQL's text holds no NUL (a statement with
 * one fails), and UTF-8 no lone surrogate (better-sqlite3 writes one as bytes it reads back as three
 * U+FFFD, `pg` as one): each becomes U+FFFD, so that every read answers the same on either engine.
 * Request bodies with a NUL are refused before they reach a store (http/body.ts); what this mends is
 * a lone surrogate sent in a request's text, and text from elsewhere, such as the answer a webhook
 * receiver (or a listen session's local server) gave.
 */
export function storableText(text: string): string {
  return isStorable(text)
    ? text
    : ((text as UnicodeText).toWellFormed() as string).replaceAll('\0', '\uFFFD');
}

type UnicodeText = string & { isWellFormed(): boolean; toWellFormed(): string };

export const isStorable = (text: string): boolean =>
  (text as UnicodeText).isWellFormed() && !text.includes('\0');
