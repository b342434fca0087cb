import type { Logger } from 'pino';
import { isPassingStorageFailure } from '../core/storage-errors.js';

/**
 * Writes that failed for a passing reason and must not be lost (the outcome of a webhook send already
 * made), per account, in order. They are tried again before the account's other work; one that
 * fails for any other reason is logged and dropped.
 */
export class UnwrittenWrites {
  private readonly writes = new Map<string, (() => Promise<void>)[]>();

  constructor(private readonly logger: Logger) {}

  add(accountId: string, write: () => Promise<void>): void {
    const writes = this.writes.get(accountId);
    if (writes) writes.push(write);
    else this.writes.set(accountId, [write]);
  }

  /** The accounts with writes waiting. */
  accounts(): Iterable<string> {
    return this.writes.keys();
  }

  /** Writes the account's writes in order; one that still fails for a passing reason stops there and throws. */
  async writeAll(accountId: string): Promise<void> {
    const writes = this.writes.get(accountId);
    while (writes?.length) {
      try {
        await (writes[0] as () => Promise<void>)();
      } catch (error) {
        if (isPassingStorageFailure(error)) throw error;
        this.logger.error({ err: error, account: accountId }, 'dropped a write that cannot succeed');
      }
      writes.shift();
    }
    this.writes.delete(accountId);
  }

  /** One last try for every write still waiting, as the scheduler stops; what fails now is lost with the process. */
  async lastTry(): Promise<void> {
    let lost = 0;
    for (const accountId of [...this.writes.keys()]) {
      try {
        await this.writeAll(accountId);
      } catch {
        lost += this.writes.get(accountId)?.length ?? 0;
      }
    }
    this.writes.clear();
    if (lost > 0)
      this.logger.warn(
        { writes: lost },
        'stopped with writes that could not be made (webhook attempts still sending are sent again at the next start)',
      );
  }
}
