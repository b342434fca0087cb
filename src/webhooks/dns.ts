import { lookup } from 'node:dns/promises';
import pLimit from 'p-limit';
import type { ResolveHost } from './send.js';
import { KeyedShares } from './shares.js';

/**
 * The system's resolver (`/etc/hosts`, then DNS): every address, in the order the system prefers. A
 * name under `localhost` is answered as `localhost` itself (RFC 6761, as browsers and curl do), never
 * asked of DNS: the sandbox takes `http://hooks.localhost` as a loopback receiver, so it must be one.
 */
export const systemResolver: ResolveHost = (hostname) =>
  lookup(/\.localhost\.?$/i.test(hostname) ? 'localhost' : hostname, { all: true });

/**
 * Host name lookups at once. Each lookup through the system resolver occupies one of libuv's four
 * worker threads (which file access needs too) until the name's DNS servers answer or give up: a
 * tenant whose names never answer holds one of them, and other accounts' lookups still run.
 */
const LOOKUPS_PER_ACCOUNT = 1;
const LOOKUPS_PER_SERVER = 3;

/** A resolver shared by every account, each within its share of lookups and the server's. */
export class SharedResolver {
  private readonly perServer = pLimit(LOOKUPS_PER_SERVER);
  private readonly perAccount = new KeyedShares(LOOKUPS_PER_ACCOUNT);

  constructor(private readonly resolve: ResolveHost = systemResolver) {}

  /** The resolver an account's sends use. */
  forAccount(accountId: string): ResolveHost {
    return (hostname) => this.perAccount.run(accountId, () => this.perServer(() => this.resolve(hostname)));
  }
}
