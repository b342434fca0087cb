import pg from 'pg';

/**
 * One connection in pg's pipeline mode (node-postgres.com/features/pipelining), for the statements
 * that run on their own, outside a transaction: the key a request carries, the row it reads, the
 * journal's batch. Each of the pool's connections answers one statement at a time, so every statement
 * wakes a PostgreSQL backend that went to sleep after the last and then the sandbox when it answers;
 * on a shared machine those wake-ups cost both processes more CPU than the statements themselves.
 * Here the statements of the requests in flight go out back to back on one connection, which the
 * backend answers without sleeping in between. Each still has its own result and its own error (pg
 * ends each with a Sync): a failing statement fails only its own request.
 *
 * Transactions keep the pool's connections: their statements depend on one another, and a pipeline
 * shared with other requests must never be inside one.
 *
 * The connection is opened at the first statement and again at the next one after it breaks (the
 * server restarted): the statements written on a broken connection fail with it, as a pool's would.
 */
/** How long a pipelined connection stays open with nothing to do: as long as an idle one of `pg`'s pool. */
export const IDLE_MS = 10_000;

export class PipelinedConnection {
  private opening: Promise<pg.Client> | undefined;
  /** When each statement not yet answered was sent, oldest first (a Map keeps insertion order). */
  private readonly unanswered = new Map<object, number>();
  /** Ends the connection once it has had nothing to do for `idleMs`, as the pool ends an idle one. */
  private idle: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly prepare: (client: pg.ClientBase) => Promise<unknown>,
    private readonly onIdleError?: (error: Error) => void,
    private readonly idleMs = IDLE_MS,
  ) {}

  query(config: pg.QueryConfig): Promise<pg.QueryResult> {
    // The words `pg`'s pool uses, which say "unavailable" to the sandbox (core/storage-errors.ts).
    if (this.closed) return Promise.reject(new Error('Cannot use a pool after calling end'));
    let opening: Promise<pg.Client>;
    try {
      opening = this.client();
    } catch (error) {
      // The client could not even be made (a certificate file the URL names is missing).
      return Promise.reject(error);
    }
    const token = {};
    this.unanswered.set(token, performance.now());
    clearTimeout(this.idle);
    return opening
      .then((client) => client.query(config))
      .finally(() => {
        this.unanswered.delete(token);
        if (this.unanswered.size === 0) this.idle = setTimeout(() => this.end(), this.idleMs).unref();
      });
  }

  /**
   * Whether a statement has waited for its answer longer than `ms`: one slow statement (a long list,
   * a row lock another replica holds) holds up every one sent behind it on this connection.
   */
  stalled(now: number, ms: number): boolean {
    for (const sentAt of this.unanswered.values()) return now - sentAt > ms;
    return false;
  }

  /** Whether it is open (or opening), and whether a statement waits on it: the pool's figures. */
  get open(): boolean {
    return this.opening !== undefined;
  }

  get busy(): boolean {
    return this.unanswered.size > 0;
  }

  /** Ends the connection, and refuses statements from then on. */
  close(): Promise<void> {
    this.closed = true;
    return this.end();
  }

  /** Ends the connection, if open; the next statement opens another (unless closed). */
  private async end(): Promise<void> {
    clearTimeout(this.idle);
    const opening = this.opening;
    this.opening = undefined;
    const client = await opening?.catch(() => undefined);
    await client?.end().catch(() => {});
  }

  private client(): Promise<pg.Client> {
    if (this.opening) return this.opening;
    const client = new pg.Client({ ...this.config, pipeline: true });
    const forget = () => {
      if (this.opening === opening) this.opening = undefined;
    };
    // An error while no statement waits on the connection (the server ended it) would otherwise end
    // the process; the statements in flight fail on their own.
    client.on('error', (error) => {
      forget();
      this.onIdleError?.(error);
    });
    client.on('end', forget);
    const opening = client
      .connect()
      .then(() => this.prepare(client))
      .then(
        () => client,
        async (error: unknown) => {
          forget();
          await client.end().catch(() => {});
          throw error;
        },
      );
    this.opening = opening;
    return opening;
  }
}
