import type { Context, MiddlewareHandler } from 'hono';
import { LRUCache } from 'lru-cache';
import { ApiError } from '../core/errors.js';
import { isLoopbackHost, normaliseHost } from '../core/hosts.js';
import type { AppEnv } from './context.js';

/**
 * What web pages may do to a sandbox through a browser: a developer's sandbox on loopback is reachable
 * from every page the developer opens, and a shared one from every page its users open.
 */

/**
 * Both checks below in one step, as every request passes them: the `Host` check where the sandbox
 * listens on loopback (`localHosts`, its `--allowed-host` names), then the cross-site one. Not async:
 * a step that only checks a request hands back `next()`'s own promise, a promise turn less a request.
 */
export function guardAgainstPages(localHosts: readonly string[] | undefined): MiddlewareHandler<AppEnv> {
  const checkHost = localHosts === undefined ? undefined : allowOnlyLocalHosts(localHosts);
  return (c, next) => {
    checkHost?.(c);
    refuseCrossSite(c);
    return next();
  };
}

/**
 * A sandbox listening on loopback answers only requests for a loopback name or address (with any
 * port), or for a name given with `--allowed-host`: DNS rebinding points a page's own name at
 * 127.0.0.1, and the browser then lets that page call the sandbox as its own origin, with its name in
 * `Host`. Both the `Host` header and the request's URL (an absolute-form target) are checked.
 */
function allowOnlyLocalHosts(allowedHosts: readonly string[]): (c: Context<AppEnv>) => void {
  const allowed = new Set(allowedHosts.map(normaliseHost));
  // Every request names one or two authorities, nearly always the same few: each one's verdict (the
  // host it names, if that is refused) is parsed once, not on every request.
  const verdicts = new LRUCache<string, { refused?: string }>({ max: 256 });
  const verdictOn = (authority: string) => {
    let verdict = verdicts.get(authority);
    if (!verdict) {
      const host = hostOfAuthority(authority);
      verdict = isLoopbackHost(host) || allowed.has(normaliseHost(host)) ? {} : { refused: host };
      verdicts.set(authority, verdict);
    }
    return verdict.refused;
  };
  return (c) => {
    const header = c.req.header('host');
    const foreign =
      verdictOn(authorityOf(c.req.url)) ?? (header === undefined ? undefined : verdictOn(header));
    if (foreign !== undefined) {
      const shown = foreign.slice(0, 100);
      throw new ApiError(
        403,
        'host_not_allowed',
        `This sandbox listens on a loopback address and answers requests for localhost, 127.0.0.1 or [::1] ` +
          `only, not for '${shown}' (a web page that reaches it under its own name may be DNS rebinding). ` +
          `If '${shown}' is a name of yours for this machine, start the sandbox with --allowed-host ${shown}.`,
      );
    }
  };
}

/** The authority of an absolute URL (`user@host:port`), as the text between `//` and the path. */
const authorityOf = (url: string) => /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(url)?.[1] ?? url;

/** The host of an authority (a `Host` header), without its port; the whole text when it is no host at all. */
function hostOfAuthority(authority: string): string {
  try {
    return new URL(`http://${authority.trim()}`).hostname;
  } catch {
    return authority;
  }
}

/**
 * Requests a browser marks `Sec-Fetch-Site: cross-site`, made by a page of another site (a form, an
 * image, a script's fetch), are refused: any page could otherwise create accounts with a body-less
 * POST, or drive an account whose key the browser holds. A label's pre-signed URL may be opened from
 * anywhere (a merchant's own back office links to it). Pages of the same site (a developer's front end
 * on another localhost port), the sandbox's own pages, and clients that are no browser send another
 * value or none. Not `hono/csrf`: it judges only unsafe methods with a form's content types.
 */
function refuseCrossSite(c: Context<AppEnv>): void {
  const site = c.req.header('sec-fetch-site')?.trim().toLowerCase();
  if (site === 'cross-site' && !(c.req.method === 'GET' && c.req.path.startsWith('/cdn/labels/'))) {
    throw new ApiError(
      403,
      'cross_site_request',
      'The sandbox takes no requests that a page of another site made through a browser ' +
        '(Sec-Fetch-Site: cross-site); only label files (/cdn) may be fetched that way. Call it from your ' +
        'own code, or open its address yourself.',
    );
  }
}
