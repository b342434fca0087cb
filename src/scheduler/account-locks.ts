/**
 * Serialises work on one account: a task starts when every earlier task of the account is done.
 * Accounts do not wait for one another. Advances and the background timer both go through it, so
 * a jump and the timer never run the same item twice.
 */
export class AccountLocks {
  /** The tail of each account's queue of tasks. */
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(accountId: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(accountId) ?? Promise.resolve();
    const run = previous.then(task, task);
    const tail = run.catch(() => undefined);
    this.tails.set(accountId, tail);
    void tail.then(() => {
      if (this.tails.get(accountId) === tail) this.tails.delete(accountId);
    });
    return run;
  }

  /** Resolves once every task queued so far has ended. */
  async idle(): Promise<void> {
    await Promise.all([...this.tails.values()]);
  }
}
