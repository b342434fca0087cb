import { toJsonText } from '../core/json.js';
import { CursorCodec } from '../core/paging.js';
import { SettingsStore } from '../db/settings.js';
import { sampleEventData } from '../events/sample-events.js';
import type { SandboxModule } from '../module.js';
import { AttemptStore } from './attempt-store.js';
import { WebhookDelivery } from './delivery.js';
import { DestinationPolicy } from './destinations.js';
import { WEBHOOKS_MIGRATIONS } from './migrations.js';
import { webhookRoutes } from './routes.js';
import { webhookControlRoutes } from './sandbox-routes.js';
import type { ResolveHost } from './send.js';
import { WebhookService } from './service.js';
import { ANY_SUBSCRIBED_WEBHOOK, WebhookStore } from './store.js';

declare module '../module.js' {
  interface Ports {
    webhooks: {
      service: WebhookService;
      delivery: WebhookDelivery;
      store: WebhookStore;
      attempts: AttemptStore;
    };
  }
}

/**
 * Webhooks: their routes under /v1, the delivery log and redelivery under /_sandbox, the e-mail
 * outbox, and the delivery attempts as due work of the scheduler: every event's deliveries are
 * written in the transaction that records it (the outbox).
 */
export function webhooksModule(settings: {
  /** `--webhook-targets`, as it applies to this server. */
  targets: 'local' | 'public';
  allowHosts: readonly string[];
  allowHttp: boolean;
  timeoutMs: number;
  /** Resolves receivers' host names; the system's resolver unless a test makes names resolve to loopback. */
  resolveHost?: ResolveHost | undefined;
}): SandboxModule {
  return {
    name: 'webhooks',
    migrations: WEBHOOKS_MIGRATIONS,
    async build({ db, scheduler, realNow, logger, metrics, ports, provide }) {
      const store = new WebhookStore();
      const attempts = new AttemptStore();
      const events = ports.events.store;
      const destinations = new DestinationPolicy({
        targets: settings.targets,
        allowHosts: settings.allowHosts,
      });
      const service = new WebhookService({
        db,
        store,
        attempts,
        urlRules: { destinations, allowHttp: settings.allowHttp },
        // A secret of the list's own, so that no other list's cursor means anything here.
        cursors: new CursorCodec(await new SettingsStore(db).secret('webhooks_cursor_signing_secret')),
      });
      const delivery = new WebhookDelivery({
        db,
        store,
        attempts,
        scheduler,
        eventBody: (eventId) => events.body(db, eventId),
        retryLadderOf: (q, accountId) => ports.accounts.service.retryLadderOf(q, accountId),
        timeoutMs: settings.timeoutMs,
        destinations,
        resolve: settings.resolveHost,
        recordTestEvent: (tx, accountId, type, now) =>
          events.record(tx, accountId, type, toJsonText(sampleEventData(type, now)), now, {
            announce: false,
          }),
        realNow,
        nowOf: (accountId) => ports.clock.nowOf(accountId),
        logger,
        metrics,
      });
      events.subscribe((tx, event) => delivery.fanOut(tx, event), ANY_SUBSCRIBED_WEBHOOK);
      provide('webhooks', { service, delivery, store, attempts });
      return {
        api: webhookRoutes(service),
        controls: webhookControlRoutes(db, service, delivery, store, attempts),
        queues: [delivery],
        async reset(tx, accountId) {
          await attempts.deleteAccount(tx, accountId);
          await store.deleteAccount(tx, accountId);
        },
        start: () => delivery.start(),
        close: (deadline) => delivery.drain(deadline),
      };
    },
  };
}
