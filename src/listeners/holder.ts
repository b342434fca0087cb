import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Caller } from '../core/actor.js';
import { formatTimestamp } from '../core/time.js';
import type { Sql } from '../db/sql.js';
import type { DeliveryMessage, ReadyMessage } from './schema.js';
import type { ListenerService } from './service.js';
import type { ListenerAttemptRecord, ListenerStore } from './store.js';

/** Where a connection's messages go: the open stream of server-sent events. */
export interface StreamSink {
  event(name: 'ready' | 'delivery' | 'ended', data: string, id?: string): void;
  comment(text: string): void;
  /** Ends the stream; the route then calls `release`. */
  close(): void;
}

/** One connection holding a session in this process. */
export interface Connection {
  /** What the session's `holder` column says while this connection holds it. */
  readonly id: string;
  readonly sessionId: string;
  readonly accountId: string;
  /** The stream, once it is open. */
  sink: StreamSink | undefined;
  /** What the stream says first. */
  readonly ready: ReadyMessage;
  /** Attempts already sent down this connection: sent again only on a new connection. */
  readonly sent: Set<string>;
  /** Sends to this connection, one after another, in order. */
  sending: Promise<void>;
  heartbeat: NodeJS.Timeout | undefined;
  /** Closed here before its stream opened: it opens only to close. */
  closed: boolean;
  released: boolean;
}

export interface SessionHolderDeps {
  db: Sql;
  store: ListenerStore;
  service: ListenerService;
  /** An event's envelope, byte for byte as first recorded (the events module). */
  eventBody: (eventId: string) => Promise<string | undefined>;
  /** How long a forward may take: the webhook timeout, which the command is told. */
  timeoutMs: number;
  heartbeatMs: number;
  /**
   * How often this process looks at the database for what other processes did: attempts handed to
   * the sessions it holds, sessions taken over or ended, commands gone silent, sessions to end.
   */
  roundMs: number;
  realNow: () => number;
  logger: Logger;
}

/**
 * The sessions whose connection this process holds, and their streams. What happens here is told at
 * once (an attempt handed over by this process's scheduler); what other processes do sharing the
 * database is found by a round every `roundMs`: one indexed query for the attempts handed to the
 * sessions held here, one for those sessions' state, and the sweep that ends sessions whose
 * connection is gone, whichever process held them.
 */
export class SessionHolder {
  private readonly connections = new Map<string, Connection>();
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;

  constructor(private readonly deps: SessionHolderDeps) {}

  /**
   * Takes the session up for a new connection, before its stream opens (so that a session that
   * cannot be taken up is refused with an error answer, not a stream).
   */
  async take(caller: Caller, sessionId: string): Promise<Connection> {
    const { service, heartbeatMs, timeoutMs } = this.deps;
    const id = `conn_${randomBytes(12).toString('base64url')}`;
    const secret = await service.secretOf(caller.accountId);
    const session = await service.attach(caller, sessionId, id);
    const connection: Connection = {
      id,
      sessionId,
      accountId: caller.accountId,
      sink: undefined,
      ready: {
        id: session.id,
        forward_to: session.forwardTo,
        events: session.events,
        secret,
        heartbeat_ms: heartbeatMs,
        timeout_ms: timeoutMs,
      },
      sent: new Set(),
      sending: Promise.resolve(),
      heartbeat: undefined,
      closed: false,
      released: false,
    };
    this.connections.set(id, connection);
    return connection;
  }

  /** The connection's stream is open: it says the session is ready, then sends what the session owes. */
  open(connection: Connection, sink: StreamSink): void {
    connection.sink = sink;
    if (connection.closed || connection.released) {
      sink.close();
      return;
    }
    sink.event('ready', JSON.stringify(connection.ready));
    connection.heartbeat = setInterval(() => sink.comment('heartbeat'), this.deps.heartbeatMs);
    this.sendOwed([connection]);
  }

  /** The connection closed (the command went away, or the stream was ended here). */
  async release(connection: Connection): Promise<void> {
    if (connection.released) return;
    connection.released = true;
    if (connection.heartbeat) clearInterval(connection.heartbeat);
    this.connections.delete(connection.id);
    try {
      await this.deps.service.detach(connection.sessionId, connection.id);
    } catch (error) {
      // The database may be closing under a stopping server: the session then ends by the sweep.
      this.deps.logger.warn(
        { err: error, listener: connection.sessionId },
        'could not record a closed listen connection',
      );
    }
  }

  /** An attempt of the session was handed to it here: the connection holding it sends it now. */
  handedOver(sessionId: string): void {
    const holding = [...this.connections.values()].filter((connection) => connection.sessionId === sessionId);
    if (holding.length > 0) this.sendOwed(holding);
  }

  start(): void {
    this.timer = setInterval(() => {
      // One round at a time: a slow database does not pile them up.
      this.round ??= this.runRound()
        .catch((error: unknown) => this.deps.logger.warn({ err: error }, 'listen sessions round failed'))
        .finally(() => {
          this.round = undefined;
        });
    }, this.deps.roundMs);
    this.timer.unref();
  }

  /** Ends every stream held here; each session gets its grace, for its command to reconnect elsewhere. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.round;
    const connections = [...this.connections.values()];
    await Promise.all(connections.map((connection) => this.release(connection)));
    for (const connection of connections) this.close(connection);
  }

  /**
   * Ends the connection's stream, once, and lets go of its session at once: a command that stopped
   * reading (suspended, say) may never take in what is still queued for it, and the stream's own end
   * waits for that.
   */
  private close(connection: Connection, reason?: string): void {
    if (connection.closed) return;
    connection.closed = true;
    if (connection.heartbeat) clearInterval(connection.heartbeat);
    if (connection.sink) {
      if (reason) connection.sink.event('ended', JSON.stringify({ reason }));
      connection.sink.close();
    }
    void this.release(connection);
  }

  /** Sends each connection the attempts handed to its session that it has not sent yet. */
  private sendOwed(connections: Connection[]): void {
    const { db, store } = this.deps;
    const owed = store.sending(
      db,
      connections.map((connection) => connection.sessionId),
    );
    // Read once for all of them; each connection's chain below awaits it (and sees its failure).
    owed.catch(() => undefined);
    for (const connection of connections) {
      connection.sending = connection.sending
        .then(async () => {
          const attempts = (await owed).filter((attempt) => attempt.sessionId === connection.sessionId);
          // What the session no longer owes needs no remembering: answered, or failed with it gone.
          const stillOwed = new Set(attempts.map((attempt) => attempt.id));
          for (const id of connection.sent) if (!stillOwed.has(id)) connection.sent.delete(id);
          for (const attempt of attempts) {
            if (connection.sent.has(attempt.id)) continue;
            if (connection.released || !connection.sink) return;
            const message = await this.messageOf(attempt);
            if (!message) continue;
            connection.sent.add(attempt.id);
            connection.sink?.event('delivery', JSON.stringify(message), attempt.id);
          }
        })
        .catch((error: unknown) =>
          this.deps.logger.warn(
            { err: error, listener: connection.sessionId },
            'could not send owed deliveries',
          ),
        );
    }
  }

  private async messageOf(attempt: ListenerAttemptRecord): Promise<DeliveryMessage | undefined> {
    const body = await this.deps.eventBody(attempt.eventId);
    if (body === undefined) return undefined;
    return {
      id: attempt.id,
      listener_id: attempt.sessionId,
      event_id: attempt.eventId,
      event: attempt.eventType,
      attempt: attempt.attempt,
      sent_at: formatTimestamp(attempt.sentAt ?? attempt.scheduledAt),
      body,
    };
  }

  /**
   * What other processes did: a session held here that another connection took over, that ended (a
   * reset), or whose command stopped answering heartbeats, has its stream closed; attempts handed to
   * sessions held here are sent; then sessions whose connection is gone are ended.
   */
  private async runRound(): Promise<void> {
    const { db, store, service, realNow } = this.deps;
    const held = [...this.connections.values()];
    if (held.length > 0) {
      const sessions = new Map(
        (await store.byIds(db, [...new Set(held.map((connection) => connection.sessionId))])).map(
          (session) => [session.id, session],
        ),
      );
      const silentSince = realNow() - service.silenceMs;
      const kept: Connection[] = [];
      for (const connection of held) {
        const session = sessions.get(connection.sessionId);
        if (!session || session.endedAt !== null) {
          this.close(connection, session ? 'the session ended' : 'the account was reset');
        } else if (session.holder !== connection.id || session.seenAt < silentSince) {
          // Taken over by a newer connection, or the command stopped answering: this one is dead.
          this.close(connection);
        } else if (connection.sink) kept.push(connection);
      }
      if (kept.length > 0) this.sendOwed(kept);
    }
    await service.sweep();
  }
}
