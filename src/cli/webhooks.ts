import { randomBytes } from 'node:crypto';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { EVENT_TYPES } from '../events/schema.js';
import { SECRET_LENGTH } from '../webhooks/schema.js';
import { controlAction, parseLimit, segment } from './control.js';
import {
  type Attempt,
  type AttemptList,
  type EmailList,
  formatAttempt,
  formatAttempts,
  formatEmails,
  formatWebhookCreated,
  formatWebhooks,
  type Webhook,
} from './format.js';
import { everyItem } from './pages.js';
import type { Answer } from './sandbox-api.js';
import { asDefaultSubcommand } from './suggest.js';

/**
 * `webhooks` (list, create, delete), `deliveries`, `redeliver`, `emails`: the account's
 * receivers and what they were sent. The webhooks are managed under `/_sandbox`, where nothing the
 * command does counts against the account's own client.
 */
export function addWebhookCommands(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description('list (the default); create <url> registers one; delete <webhook-id> removes one');

  controlAction(
    asDefaultSubcommand(webhooks.command('list', { isDefault: true })).description(
      "list the account's webhooks, to find an id",
    ),
    async ({ api, out }) => out.answer(await everyItem<Webhook>(api, '/_sandbox/webhooks'), formatWebhooks),
  );

  controlAction(
    webhooks
      .command('create')
      .description('register a webhook; prints the signing secret it made, when none is given')
      .argument('<url>', 'where deliveries go (http:// is taken for loopback hosts)')
      .addOption(
        new Option('--events <names>', 'the events it subscribes to, separated by commas')
          .argParser(parseEvents)
          .default([...EVENT_TYPES], 'all seven'),
      )
      .option(
        '--secret <secret>',
        `its signing secret, ${SECRET_LENGTH.min} to ${SECRET_LENGTH.max} characters (default: a new one)`,
      ),
    async ({ api, out }, { args: [url], options }) => {
      const given = options.secret as string | undefined;
      const secret = given ?? newSecret();
      const answer = await api.post<Webhook>('/_sandbox/webhooks', { url, events: options.events, secret });
      // The sandbox never shows a secret again: one it made is printed with the webhook, once.
      const shown = given === undefined ? withSecret(answer, secret) : answer;
      out.answer(shown, (webhook) => formatWebhookCreated(webhook, given === undefined ? secret : undefined));
    },
  );

  controlAction(
    webhooks
      .command('delete')
      .description('delete a webhook: it gets no more deliveries')
      .argument('<webhook-id>', 'the webhook (wh_…; see `shipping-sandbox webhooks`)'),
    async ({ api, out }, { args: [id] }) =>
      out.answer(
        await api.delete<{ id: string }>(`/_sandbox/webhooks/${segment(id)}`),
        (deleted) => `Deleted ${deleted.id}.\n`,
      ),
  );

  controlAction(
    program
      .command('deliveries')
      .description("list a webhook's delivery attempts, newest first: each try, its event and the answer")
      .argument('<webhook-id>', 'the webhook (wh_…; see `shipping-sandbox webhooks`)')
      .option('--limit <n>', 'how many', parseLimit, 20),
    async ({ api, out }, { args: [id], options }) =>
      out.answer(
        await api.get<AttemptList>(`/_sandbox/webhooks/${segment(id)}/deliveries?limit=${options.limit}`),
        formatAttempts,
      ),
  );

  controlAction(
    program
      .command('redeliver')
      .description('send a delivery again now, as a new attempt, and print how the receiver answered')
      .argument('<delivery-id>', 'the attempt to send again (dlv_…; see `shipping-sandbox deliveries`)'),
    async ({ api, out }, { args: [id] }) =>
      out.answer(await api.post<Attempt>(`/_sandbox/deliveries/${segment(id)}/redeliver`), formatAttempt),
  );

  controlAction(
    program
      .command('emails')
      .description("read the account's e-mail outbox (the alert when a webhook is marked failed)")
      .option('--limit <n>', 'how many', parseLimit, 20),
    async ({ api, out }, { options }) =>
      out.answer(await api.get<EmailList>(`/_sandbox/emails?limit=${options.limit}`), formatEmails),
  );
}

/** A signing secret as `stripe listen` makes one: `whsec_` and 32 random bytes. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/** The answer with the secret the command made, for a script reading the JSON. */
function withSecret(answer: Answer<Webhook>, secret: string): Answer<Webhook & { secret: string }> {
  const data = { ...answer.data, secret };
  return { ...answer, data, text: JSON.stringify(data) };
}

/** `--events a,b`: event names, checked here so that a typo is a usage error. */
export function parseEvents(text: string): string[] {
  const events = text.split(',').map((event) => event.trim());
  const unknown = events.filter((event) => !(EVENT_TYPES as readonly string[]).includes(event));
  if (unknown.length > 0 || events.length === 0)
    throw new InvalidArgumentError(
      `Not an event: ${unknown.join(', ')}. Events are ${EVENT_TYPES.join(', ')}.`,
    );
  return events;
}
