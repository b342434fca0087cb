import { setTimeout as sleep } from 'node:timers/promises';
import { type Command, InvalidArgumentError } from 'commander';
import { durationMillis } from '../core/duration.js';
import { type Control, controlAction, parseLimit, segment } from './control.js';
import {
  type Attempt,
  type AttemptList,
  type EmailList,
  formatAttempt,
  formatAttempts,
  formatEmails,
  formatWebhooks,
  type WebhookList,
} from './format.js';
import { SandboxError, UnreachableError } from './sandbox-api.js';

/** `webhooks`, `deliveries`, `redeliver`, `listen`, `emails`: what the account's receivers were sent. */
export function addWebhookCommands(program: Command): void {
  controlAction(
    program.command('webhooks').description("list the account's webhooks, to find an id"),
    async ({ api, out }) => out.answer(await api.get<WebhookList>('/v1/webhooks'), formatWebhooks),
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
      .command('listen')
      .description('print webhook deliveries as they happen, one line each, until stopped (Ctrl-C)')
      .option('--webhook <webhook-id>', 'only this webhook')
      .option('--interval <duration>', 'how often to look', parseInterval, 1000),
    listen,
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

const SETTLED = new Set(['succeeded', 'failed', 'cancelled']);

/**
 * Polls the deliveries of the account's webhooks and prints each attempt once it has an outcome,
 * oldest first. Attempts settled before it started are not printed: like `stripe listen`, it shows
 * what happens from now on. A sandbox that goes away is waited for, not given up on.
 */
async function listen({ api, out }: Control, { options }: { options: Record<string, unknown> }) {
  const only = options.webhook as string | undefined;
  const interval = options.interval as number;
  const printed = new Set<string>();
  let first = true;
  let lost = false;
  for (;;) {
    try {
      const webhooks = only
        ? [{ id: only }]
        : (await api.get<WebhookList>('/v1/webhooks')).data.data.map((webhook) => ({ id: webhook.id }));
      const settled: Attempt[] = [];
      for (const webhook of webhooks) {
        const attempts = await deliveriesOf(api, webhook.id, only !== undefined);
        settled.push(...attempts.filter((a) => SETTLED.has(a.status) && !printed.has(a.id)));
      }
      settled.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      for (const attempt of settled) {
        printed.add(attempt.id);
        if (!first) out.item(attempt, formatAttempt);
      }
      if (first) {
        process.stderr.write(
          `Listening for webhook deliveries at ${api.origin}${only ? ` to ${only}` : ''} (Ctrl-C to stop)\n`,
        );
        first = false;
      }
      if (lost) process.stderr.write('The sandbox answers again.\n');
      lost = false;
    } catch (error) {
      if (!(error instanceof UnreachableError)) throw error;
      if (!lost) process.stderr.write(`${error.message}\nTrying again every ${interval} ms.\n`);
      lost = true;
    }
    await sleep(interval);
  }
}

/** A webhook deleted since the list was read has no deliveries, unless it was the one asked for. */
async function deliveriesOf(api: Control['api'], id: string, asked: boolean): Promise<Attempt[]> {
  try {
    return (await api.get<AttemptList>(`/_sandbox/webhooks/${segment(id)}/deliveries?limit=100`)).data.data;
  } catch (error) {
    if (!asked && error instanceof SandboxError && error.status === 404) return [];
    throw error;
  }
}

function parseInterval(text: string): number {
  const millis = durationMillis(text);
  if (millis === undefined || millis < 50 || millis > 60_000)
    throw new InvalidArgumentError('Not a duration from 50ms to 1m (such as 1s or 250ms).');
  return millis;
}
