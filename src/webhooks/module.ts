import type { SandboxModule } from '../module.js';
import type { WebhookDelivery } from './delivery.js';
import { webhookRoutes } from './routes.js';
import { webhookControlRoutes } from './sandbox-routes.js';
import type { WebhookService } from './service.js';
import type { WebhookStore } from './store.js';

/**
 * Webhooks: their routes under /v1, the delivery log and redelivery under /_sandbox, the e-mail
 * outbox, and the delivery attempts as due work of the scheduler.
 */
export function webhooksModule(deps: {
  webhooks: WebhookService;
  delivery: WebhookDelivery;
  store: WebhookStore;
}): SandboxModule {
  return {
    name: 'webhooks',
    tables: ['webhooks', 'webhook_attempts', 'webhook_requests', 'emails'],
    api: webhookRoutes(deps.webhooks),
    controls: webhookControlRoutes(deps.webhooks, deps.delivery, deps.store),
    queues: [deps.delivery],
    reset: (accountId) => deps.store.deleteAccount(accountId),
    start: () => deps.delivery.resumeInterrupted(),
    close: (deadline) => deps.delivery.drain(deadline),
  };
}
