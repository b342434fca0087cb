import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Host names and addresses, as URLs, resolvers and flags write them. */

/**
 * One spelling per host, as the URL parser writes it: lower case, no brackets around IPv6, no
 * trailing dot (`metadata.` is `metadata`), an IPv4 address in dotted decimal however it was
 * written (`0x7f.1`), and an IPv6 one in its canonical form (`::ffff:7f00:1` is `127.0.0.1`), so an
 * allow-list entry, a URL's host and a resolver's answer compare equal however each is written.
 */
export function normaliseHost(host: string): string {
  const text = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  if (isIP(text)) return ipaddr.process(text).toString();
  if (text.includes(':')) return text;
  try {
    const parsed = new URL(`http://${text}/`).hostname.replace(/\.$/, '');
    return isIP(parsed) ? ipaddr.process(parsed).toString() : parsed;
  } catch {
    return text;
  }
}

/** `localhost`, a name under it, or a loopback address (`127.0.0.0/8`, `::1`, and their IPv6-mapped forms). */
export function isLoopbackHost(hostname: string): boolean {
  const host = normaliseHost(hostname);
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  return isIP(host) !== 0 && ipaddr.process(host).range() === 'loopback';
}
