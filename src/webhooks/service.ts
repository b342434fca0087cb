import type { Actor } from '../core/actor.js';
import { ACCOUNT_CAPS, ensureUnderCap } from '../core/caps.js';
import { ApiError, invalidField, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import {
  type CursorCodec,
  LIST_PAGE_SIZE,
  type PageMeta,
  type PageQuery,
  pageMeta,
  parseLimit,
} from '../core/paging.js';
import { formatTimestamp } from '../core/time.js';
import { holdAccount } from '../db/account-lock.js';
import type { Sql } from '../db/sql.js';
import type { AttemptRecord, AttemptStore } from './attempt-store.js';
import { type DestinationPolicy, isLoopbackHost, registrationRefusal } from './destinations.js';
import { type CreateWebhookInput, type UpdateWebhookInput, URL_MAX_LENGTH } from './schema.js';
import type { WebhookRecord, WebhookStore } from './store.js';

/** What a webhook's URL must satisfy: the server's destination policy and its plain-http rule. */
export interface WebhookUrlRules {
  destinations: DestinationPolicy;
  /** `--allow-http-webhooks`: plain http:// receivers on any host. */
  allowHttp: boolean;
}

/**
 * Receivers must be `https://` (the specification), except on loopback hosts, where a developer's
 * local receiver lives; `--allow-http-webhooks` accepts plain http everywhere. The host must be one
 * the destination policy accepts, judged as written: a name is not resolved here (it is at every
 * attempt), since what it resolves to now says nothing of what it will resolve to then.
 */
export function checkWebhookUrl(raw: string, rules: WebhookUrlRules): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidField('url', "'url' must be an absolute URL such as https://shop.example.com/hooks.");
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw invalidField('url', "'url' must be an https:// URL.");
  }
  if (url.username || url.password)
    throw invalidField('url', "'url' must not carry a user name or password.");
  const refusal = rules.destinations.checkHost(url.hostname);
  if (refusal) throw invalidField('url', registrationRefusal(refusal));
  if (url.protocol === 'http:' && !rules.allowHttp && !isLoopbackHost(url.hostname)) {
    throw invalidField(
      'url',
      "'url' must be https://; plain http:// is accepted only for a loopback host (localhost, *.localhost, 127.0.0.0/8, [::1]) or with --allow-http-webhooks.",
    );
  }
  // The schema caps the text as sent; what is stored and requested at every attempt is percent-encoded,
  // up to nine times longer (a non-ASCII character), so the cap holds for that too.
  const encoded = url.toString();
  if (encoded.length > URL_MAX_LENGTH)
    throw invalidField('url', `'url' must be at most ${URL_MAX_LENGTH} characters once percent-encoded.`);
  return encoded;
}

export type PresentedWebhook = ReturnType<typeof presentWebhook>;

export function presentWebhook(webhook: WebhookRecord) {
  return {
    id: webhook.id,
    url: webhook.url,
    events: webhook.events,
    status: webhook.status,
    created_at: formatTimestamp(webhook.createdAt),
  };
}

/**
 * How an attempt went, as every list of deliveries shows it (a webhook's, and a listen session's):
 * the fields that follow its own identifiers, in this order.
 */
export function presentAttemptOutcome<Status extends string, ErrorKind extends string>(attempt: {
  status: Status;
  scheduledAt: number;
  sentAt: number | null;
  responseStatus: number | null;
  responseExcerpt: string | null;
  durationMs: number | null;
  error: ErrorKind | null;
  errorMessage: string | null;
  nextAttemptAt: number | null;
}) {
  const time = (ms: number | null) => (ms === null ? null : formatTimestamp(ms));
  return {
    status: attempt.status,
    scheduled_at: formatTimestamp(attempt.scheduledAt),
    sent_at: time(attempt.sentAt),
    response_status: attempt.responseStatus,
    response_excerpt: attempt.responseExcerpt,
    duration_ms: attempt.durationMs,
    error: attempt.error,
    error_message: attempt.errorMessage,
    next_attempt_at: time(attempt.nextAttemptAt),
  };
}

export function presentAttempt(attempt: AttemptRecord) {
  return {
    id: attempt.id,
    webhook_id: attempt.webhookId,
    event_id: attempt.eventId,
    event: attempt.eventType,
    attempt: attempt.attempt,
    redelivery: attempt.redelivery,
    probe: attempt.probe !== null,
    probe_signature: attempt.probe,
    ...presentAttemptOutcome(attempt),
  };
}

/**
 * A probe's answer. The receiver verifies signatures when it accepted the genuine delivery (2xx) and
 * answered the forged one with a refusal; a forged delivery that timed out or found no connection
 * shows nothing either way, and neither does one whose genuine twin was refused too.
 */
export function presentProbe(outcome: Record<'genuine' | 'forged', AttemptRecord>) {
  const answer = (attempt: AttemptRecord) => ({
    delivery_id: attempt.id,
    response_status: attempt.responseStatus,
    error: attempt.error,
    duration_ms: attempt.durationMs,
  });
  const { genuine, forged } = outcome;
  return {
    genuine: answer(genuine),
    forged: answer(forged),
    verifies_signatures: genuine.status === 'succeeded' && forged.error === 'http',
  };
}

/** Registering, reading, changing and deleting webhooks. */
export class WebhookService {
  constructor(
    private readonly deps: {
      db: Sql;
      store: WebhookStore;
      attempts: AttemptStore;
      urlRules: WebhookUrlRules;
      /** Signs the list's cursors and checks the ones clients send back. */
      cursors: CursorCodec;
    },
  ) {}

  /** Registers a webhook, within the account's cap (counted while the account is held). */
  create(actor: Actor, input: CreateWebhookInput): Promise<WebhookRecord> {
    const url = checkWebhookUrl(input.url, this.deps.urlRules);
    const { db, store } = this.deps;
    return db.transaction(async (tx) => {
      await holdAccount(tx, actor.accountId);
      ensureUnderCap(await store.count(tx, actor.accountId), ACCOUNT_CAPS.webhooks);
      return store.insert(tx, {
        id: newId('wh', actor.now),
        accountId: actor.accountId,
        url,
        events: input.events,
        secret: input.secret,
        status: 'active',
        createdAt: actor.now,
      });
    });
  }

  async get(actor: Actor, id: string, q: Sql = this.deps.db): Promise<WebhookRecord> {
    const webhook = await this.deps.store.find(q, actor.accountId, id);
    if (!webhook) throw notFound('webhook', id);
    return webhook;
  }

  /** One page of the account's webhooks, newest first, as shipments page. */
  async list(actor: Actor, query: PageQuery): Promise<{ data: PresentedWebhook[]; meta: PageMeta }> {
    const limit = parseLimit(query.limit, LIST_PAGE_SIZE);
    const { db, store, cursors } = this.deps;
    const after = query.cursor === undefined ? undefined : cursors.decode(actor.accountId, query.cursor);
    const [page, total] = await Promise.all([
      store.page(db, actor.accountId, limit, after),
      store.count(db, actor.accountId),
    ]);
    return { data: page.rows.map(presentWebhook), meta: pageMeta(cursors, actor.accountId, page, total) };
  }

  /** Changes what is given; `status: active` re-activates a failed webhook, which then gets new events again. */
  update(actor: Actor, id: string, change: UpdateWebhookInput): Promise<WebhookRecord> {
    const { db, store, attempts } = this.deps;
    return db.transaction(async (tx) => {
      const webhook = await this.get(actor, id, tx);
      if (Object.keys(change).length === 0) {
        throw new ApiError(422, 'missing_field', 'Give at least one of url, events, secret, status.', {
          field: 'url',
        });
      }
      const updated: WebhookRecord = {
        ...webhook,
        url: change.url === undefined ? webhook.url : checkWebhookUrl(change.url, this.deps.urlRules),
        events: change.events ?? webhook.events,
        secret: change.secret ?? webhook.secret,
        status: change.status ?? webhook.status,
      };
      if (updated.status === 'disabled')
        await attempts.cancelPending(tx, webhook.id, 'the webhook was disabled');
      await store.save(tx, updated);
      return updated;
    });
  }

  delete(actor: Actor, id: string): Promise<{ id: string; deleted: true }> {
    const { db, store, attempts } = this.deps;
    return db.transaction(async (tx) => {
      const webhook = await this.get(actor, id, tx);
      await attempts.cancelPending(tx, webhook.id, 'the webhook was deleted');
      await store.delete(tx, webhook, actor.now);
      return { id: webhook.id, deleted: true as const };
    });
  }

  /** A delivery attempt of the account, by id. */
  async attempt(actor: Actor, id: string): Promise<AttemptRecord> {
    const attempt = await this.deps.attempts.findAttempt(this.deps.db, id);
    if (!attempt || attempt.accountId !== actor.accountId) throw notFound('delivery', id);
    return attempt;
  }
}
