import pLimit from 'p-limit';
import { KeyedShares } from './shares.js';

/**
 * Sends on the wire at once: to one webhook, for one account, and across the server. A send takes
 * its webhook's share first, then its account's, then the server's, so one waiting for a wider share
 * holds only slots of its own webhook and account, never one another account could use.
 *
 * A receiver that hangs (or trickles, or refuses) holds at most its webhook's 4 for the timeout. An
 * account whose every receiver hangs holds at most its 16, a sixteenth of the server's 256: other
 * accounts' sends find a free slot at once, unless sixteen accounts hang at the same time (where
 * anyone may create accounts, `--admin-token` is what keeps one tenant from being sixteen). The
 * ceiling bounds what all sends cost together: a socket each, and what is read of an answer stops at
 * 64 KiB, of which 1 KiB is kept.
 */
const SENDS_PER_WEBHOOK = 4;
const SENDS_PER_ACCOUNT = 16;
const SENDS_PER_SERVER = 256;

export class SendLimits {
  private readonly perServer = pLimit(SENDS_PER_SERVER);
  private readonly perAccount = new KeyedShares(SENDS_PER_ACCOUNT);
  private readonly perWebhook = new KeyedShares(SENDS_PER_WEBHOOK);

  /** Runs `send` within its webhook's share, then its account's, then the server's. */
  run<T>(owner: { webhookId: string; accountId: string }, send: () => Promise<T>): Promise<T> {
    return this.perWebhook.run(owner.webhookId, () =>
      this.perAccount.run(owner.accountId, () => this.perServer(send)),
    );
  }
}
