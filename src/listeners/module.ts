import type { SandboxModule } from '../module.js';
import { SessionHolder } from './holder.js';
import { LISTENERS_MIGRATIONS } from './migrations.js';
import { ListenerQueue, Notices } from './queue.js';
import { listenerRoutes } from './sandbox-routes.js';
import { GRACE_MS, HEARTBEAT_MS } from './schema.js';
import { ListenerService, type ListenerTiming } from './service.js';
import { ANY_OPEN_SESSION, ListenerStore } from './store.js';
import { addListenerStream } from './stream-routes.js';

declare module '../module.js' {
  interface Ports {
    listeners: { service: ListenerService };
  }
}

/**
 * How often a process looks for what the others sharing its database did (attempts handed to the
 * sessions it holds, sessions to end): often over PostgreSQL, where other replicas may raise the
 * events; once a second on SQLite, where only the sweep needs it.
 */
const ROUND_MS = { sqlite: 1000, postgres: 250 } as const;

/**
 * Listen sessions: `shipping-sandbox listen --forward-to <url>` receives the account's events through
 * its own connection to the sandbox, and forwards them from its own machine. The module hears of
 * every event in the transaction that records it (as the webhook outbox does) and adds an attempt
 * for each open session that wants it; the attempts are due work on the account's clock, so retries
 * follow the ladder and a clock advance runs them.
 */
export function listenersModule(settings: {
  /** How long a forward may wait for its answer (`--webhook-timeout`), which the command is told. */
  timeoutMs: number;
  /** Shorter heartbeats and grace for tests; the defaults are 15 s and 10 s. */
  timing?: Partial<ListenerTiming> | undefined;
}): SandboxModule {
  return {
    name: 'listeners',
    migrations: LISTENERS_MIGRATIONS,
    build({ db, scheduler, realNow, logger, ports, provide }) {
      const timing = { heartbeatMs: HEARTBEAT_MS, graceMs: GRACE_MS, ...settings.timing };
      const store = new ListenerStore();
      const events = ports.events.store;
      const answers = new Notices();
      const service = new ListenerService({
        db,
        store,
        scheduler,
        retryLadderOf: (q, accountId) => ports.accounts.service.retryLadderOf(q, accountId),
        timing,
        realNow,
        answered: (accountId) => answers.notify(accountId),
      });
      const holder = new SessionHolder({
        db,
        store,
        service,
        eventBody: (eventId) => events.body(db, eventId),
        timeoutMs: settings.timeoutMs,
        heartbeatMs: timing.heartbeatMs,
        roundMs: ROUND_MS[db.engine],
        realNow,
        logger,
      });
      const queue = new ListenerQueue({
        db,
        store,
        handedOver: (sessionId) => holder.handedOver(sessionId),
        nextAnswer: (accountId, ms) => answers.next(accountId, ms),
        timeoutMs: settings.timeoutMs,
      });
      events.subscribe((tx, event) => service.fanOut(tx, event), ANY_OPEN_SESSION);
      provide('listeners', { service });
      const controls = listenerRoutes(service);
      addListenerStream(controls, holder);
      return {
        controls,
        queues: [queue],
        reset: (tx, accountId) => service.reset(tx, accountId),
        start: () => holder.start(),
        close: () => holder.stop(),
      };
    },
  };
}
