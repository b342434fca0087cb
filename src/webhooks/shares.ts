import pLimit, { type LimitFunction } from 'p-limit';

/**
 * A share of concurrent work for each key (a webhook, an account): at most `size` of a key's tasks
 * run at once, the rest wait in order. A key's share is forgotten once nothing of it runs or waits,
 * so the keys that ever sent cost nothing.
 */
export class KeyedShares {
  private readonly shares = new Map<string, { limit: LimitFunction; users: number }>();

  constructor(readonly size: number) {}

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    let share = this.shares.get(key);
    if (!share) {
      share = { limit: pLimit(this.size), users: 0 };
      this.shares.set(key, share);
    }
    share.users++;
    try {
      return await share.limit(task);
    } finally {
      share.users--;
      if (share.users === 0) this.shares.delete(key);
    }
  }
}
