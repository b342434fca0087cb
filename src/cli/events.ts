import { Argument, type Command, Option } from 'commander';
import { EVENT_TYPES } from '../events/schema.js';
import { controlAction, parseLimit } from './control.js';
import {
  type EventEnvelope,
  type EventList,
  formatEvents,
  formatTriggered,
  notSentWarning,
  type Webhook,
} from './format.js';
import { everyItem } from './pages.js';

/** `trigger` and `events`: fire a sample event at the account's webhooks, and read the event log. */
export function addEventCommands(program: Command): void {
  controlAction(
    program
      .command('trigger')
      .description("fire an event with sample data to the account's webhooks, as `stripe trigger` does")
      .addArgument(new Argument('<event>', 'the event').choices(EVENT_TYPES)),
    async ({ api, out }, { args: [event] }) => {
      const triggered = await api.post<EventEnvelope>('/_sandbox/events/trigger', { event });
      const webhooks = (await everyItem<Webhook>(api, '/_sandbox/webhooks')).data.data;
      const subscribed = webhooks.filter((webhook) => webhook.events.includes(triggered.data.event));
      // A `listen` running for the account receives it too.
      const listening = (
        await api.get<{ data: { id: string; events: string[] }[] }>('/_sandbox/listeners')
      ).data.data
        .filter((session) => session.events.includes(triggered.data.event))
        .map((session) => session.id);
      out.answer(triggered, (envelope) => formatTriggered(envelope, subscribed, listening));
      // The readable answer says it; the JSON does not, so a script reading it hears of it on stderr.
      if (
        out.mode === 'json' &&
        listening.length === 0 &&
        !subscribed.some((webhook) => webhook.status === 'active')
      )
        process.stderr.write(`${notSentWarning(triggered.data.event, subscribed)}\n`);
    },
  );

  controlAction(
    program
      .command('events')
      .description("list the account's events, newest first")
      .addOption(new Option('--event <event>', 'only this event').choices(EVENT_TYPES))
      .option('--limit <n>', 'how many', parseLimit, 20),
    async ({ api, out }, { options }) => {
      const query = new URLSearchParams({ limit: String(options.limit) });
      if (options.event !== undefined) query.set('event', String(options.event));
      out.answer(await api.get<EventList>(`/_sandbox/events?${query}`), formatEvents);
    },
  );
}
