import pLimit from 'p-limit';
import type { Sql } from '../db/sql.js';
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
 *
 * With several replicas over PostgreSQL, the webhook's and the account's shares are counted across
 * all of them (SharedSendShares); the server's share stays each replica's own.
 */
const SENDS_PER_WEBHOOK = 4;
const SENDS_PER_ACCOUNT = 16;
const SENDS_PER_SERVER = 256;

/** The attempt a send is for. */
export interface SendOwner {
  id: string;
  webhookId: string;
  accountId: string;
}

export class SendLimits {
  private readonly perServer = pLimit(SENDS_PER_SERVER);
  private readonly perAccount = new KeyedShares(SENDS_PER_ACCOUNT);
  private readonly perWebhook = new KeyedShares(SENDS_PER_WEBHOOK);

  constructor(private readonly shared?: SharedSendShares) {}

  /**
   * Runs `send` within its webhook's share, then its account's, then the server's; undefined, without
   * running it, when the attempt stopped being this replica's to send while it waited, or when `skip`
   * says so once its turn comes (a stopping sandbox: no slot of the shared ones is taken for it).
   */
  run<T>(
    owner: SendOwner,
    send: () => Promise<T>,
    skip: () => boolean = () => false,
  ): Promise<T | undefined> {
    return this.perWebhook.run(owner.webhookId, () =>
      this.perAccount.run(owner.accountId, () =>
        this.perServer(async () =>
          // Asked again once a shared slot is had: the stop may have begun while it was waited for.
          skip() || (await this.shared?.take(owner, skip)) === false || skip() ? undefined : send(),
        ),
      ),
    );
  }
}

/**
 * The webhook's and the account's shares across replicas: a send counts as on the wire while its
 * attempt is `sending` with an `on_wire_until` to come (the send's timeout and a margin), so the
 * sends of a replica that died stop counting on their own. Taking a slot counts the others in one
 * statement, under a lock of the account's for the transaction, so two replicas never both take the
 * last one.
 */
export class SharedSendShares {
  constructor(
    private readonly db: Sql,
    /** How long a send may hold its slot: the webhook timeout, and a margin. */
    private readonly holdMs: number,
  ) {}

  /**
   * Waits for a slot; false when the attempt is no longer being sent (cancelled, or finished by
   * another), or once `skip` says so.
   */
  async take(owner: SendOwner, skip: () => boolean = () => false): Promise<boolean> {
    for (let pause = 10; ; pause = Math.min(pause * 2, 200)) {
      if (skip()) return false;
      const outcome = await this.tryTake(owner);
      if (outcome !== 'full') return outcome === 'taken';
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  private tryTake(owner: SendOwner): Promise<'taken' | 'full' | 'gone'> {
    return this.db.transaction(async (tx) => {
      await tx.run('SELECT pg_advisory_xact_lock(hashtext(?))', [`sends:${owner.accountId}`]);
      // The lengths are the sandbox's own numbers, never input: they are written into the SQL.
      const row = await tx.get<{ mine: number; taken: number }>(
        `WITH mine AS (
           SELECT id FROM webhook_attempts WHERE id = @id AND status = 'sending'
         ), on_wire AS (
           SELECT webhook_id FROM webhook_attempts
            WHERE account_id = @accountId AND status = 'sending' AND id <> @id
              AND on_wire_until > clock_timestamp()
         ), taken AS (
           UPDATE webhook_attempts
              SET on_wire_until = clock_timestamp() + interval '${Math.round(this.holdMs)} milliseconds'
            WHERE id IN (SELECT id FROM mine)
              AND (SELECT count(*) FROM on_wire WHERE webhook_id = @webhookId) < ${SENDS_PER_WEBHOOK}
              AND (SELECT count(*) FROM on_wire) < ${SENDS_PER_ACCOUNT}
           RETURNING id
         )
         SELECT (SELECT count(*) FROM mine) AS mine, (SELECT count(*) FROM taken) AS taken`,
        { id: owner.id, accountId: owner.accountId, webhookId: owner.webhookId },
      );
      if (!row || Number(row.mine) === 0) return 'gone';
      return Number(row.taken) === 1 ? 'taken' : 'full';
    });
  }
}
