import { setTimeout as sleep } from 'node:timers/promises';
import { type Command, InvalidArgumentError, Option } from 'commander';
import pLimit from 'p-limit';
import type { z } from 'zod';
import { storableText } from '../core/text.js';
import { EVENT_TYPES, type EventType } from '../events/schema.js';
import {
  type DeliveryMessage,
  DeliveryMessageSchema,
  type DeliveryOutcomeInput,
  EndedMessageSchema,
  type ReadyMessage,
  ReadyMessageSchema,
} from '../listeners/schema.js';
import { DestinationPolicy } from '../webhooks/destinations.js';
import { systemResolver } from '../webhooks/dns.js';
import { CUT_OFF, sendDelivery } from '../webhooks/send.js';
import { type Control, controlAction, type Invocation, segment } from './control.js';
import { readEvents } from './event-stream.js';
import type { Output } from './output.js';
import { type SandboxApi, SandboxError, UnreachableError } from './sandbox-api.js';
import { parseEvents } from './webhooks.js';

/**
 * `listen`: the account's events through this command's own connection to the sandbox, in the way of
 * `stripe listen`. With `--forward-to`, each is POSTed to that URL from this machine, exactly as a
 * webhook delivery (its bytes, its headers, signed with the account's listen secret), and the answer
 * is reported back: the sandbox records it and retries a failure on the account's ladder. Without,
 * each event is printed. Everything goes through `/_sandbox/listeners`: nothing counts against the
 * account's own client.
 */
export function addListenCommand(program: Command): void {
  controlAction(
    program
      .command('listen')
      .description(
        "receive the account's events through this command's connection: forward each to --forward-to, or print it",
      )
      .option(
        '--forward-to <url>',
        'POST each delivery there from this machine, as a webhook delivery signed with the listen secret',
        parseForwardUrl,
      )
      .addOption(
        new Option('--events <names>', 'the events to receive, separated by commas')
          .argParser(parseEvents)
          .default([...EVENT_TYPES], 'all seven'),
      )
      .option('--skip-verify', 'take any certificate of an https --forward-to (a self-signed local server)')
      .option('--print-secret', "print the account's listen signing secret and exit")
      .addHelpText(
        'after',
        '\nOnce the session is open it prints a line that starts with Ready and ends with the signing\n' +
          'secret. Then, per delivery, a line out (-->) and a line back (<--) with the answer; with --json\n' +
          '(the default in a pipe), one JSON object a delivery. A non-2xx answer is retried on the\n' +
          "account's retry ladder (POST /_sandbox/clock/advance runs retries). The connection comes\n" +
          'back by itself: nothing raised meanwhile is lost if it is back within 10 seconds.\n\n' +
          'Examples:\n' +
          '  shipping-sandbox listen --forward-to localhost:3000/webhooks\n' +
          '  shipping-sandbox listen --forward-to https://localhost:8443/hooks --skip-verify --events label.generated\n' +
          '  shipping-sandbox listen --print-secret\n',
      ),
    listen,
  );
}

interface ListenOptions {
  forwardTo?: string;
  events: EventType[];
  skipVerify?: boolean;
  printSecret?: boolean;
}

async function listen({ api, out }: Control, { options }: Invocation): Promise<void> {
  const flags = options as unknown as ListenOptions;
  if (flags.printSecret) {
    const { data } = await api.get<{ secret: string }>('/_sandbox/listen-secret');
    process.stdout.write(`${data.secret}\n`);
    return;
  }
  await new Listener(api, out, {
    forwardTo: flags.forwardTo ?? null,
    events: flags.events,
    verifyTls: !flags.skipVerify,
  }).run();
}

/** How long to wait before connecting again: a quarter second, doubling, at most two (well within the 10 s). */
const reconnectDelay = (failures: number) => Math.min(250 * 2 ** Math.max(0, failures - 1), 2000);

/** How many answered deliveries are remembered, to answer one sent again after a reconnect. */
const REMEMBERED = 1000;

/** Forwards on the wire at once, as many as the sandbox sends to one webhook (webhooks/send-limits.ts). */
const FORWARDS_AT_ONCE = 4;

/** The pauses before each new try at telling the sandbox an answer it could not take. */
const REPORT_PAUSES_MS = [250, 500, 1000, 2000, 4000];

/** The session ended while the command was away, or the sandbox ended it (a reset): open another. */
class SessionEnded extends Error {}

/**
 * One `listen`: opens a session, follows its stream, forwards and reports each delivery, answers each
 * heartbeat, and reconnects (or opens a new session) until stopped. A sandbox that cannot be reached,
 * or that refuses the key, when the command starts is an error (exit 1), as for every command.
 */
class Listener {
  private session: { id: string; announced: boolean } | undefined;
  private ready: ReadyMessage | undefined;
  /** Deliveries answered, by attempt id: one sent again is reported again, not forwarded twice. */
  private readonly answered = new Map<string, DeliveryOutcomeInput>();
  private readonly forwarding = new Set<string>();
  private readonly forwards = pLimit(FORWARDS_AT_ONCE);

  constructor(
    private readonly api: SandboxApi,
    private readonly out: Output,
    private readonly settings: { forwardTo: string | null; events: EventType[]; verifyTls: boolean },
  ) {}

  async run(): Promise<never> {
    await this.open();
    let failures = 0;
    for (;;) {
      let reason: string;
      try {
        if (!this.session) await this.open();
        await this.follow(() => {
          if (failures > 0) say(`Reconnected to ${this.session?.id}.`);
          failures = 0;
        });
        reason = 'the connection closed';
      } catch (error) {
        if (error instanceof SessionEnded || (error instanceof SandboxError && error.status === 404)) {
          say(`The session ${this.session?.id} ended (${error.message}); opening a new one.`);
          this.session = undefined;
          continue;
        }
        // A sandbox that cannot answer for now (its database away: 503) is waited for, as one that is gone.
        const passing = error instanceof SandboxError && error.status >= 500;
        if (!(error instanceof UnreachableError || passing)) throw error;
        reason = error.message;
      }
      failures += 1;
      const delay = reconnectDelay(failures);
      if (failures === 1) say(`Lost the sandbox at ${this.api.origin} (${reason}); reconnecting.`);
      await sleep(delay);
    }
  }

  private async open(): Promise<void> {
    const { data } = await this.api.post<{ id: string }>('/_sandbox/listeners', {
      forward_to: this.settings.forwardTo,
      events: this.settings.events,
    });
    this.session = { id: data.id, announced: false };
  }

  /**
   * Follows the session's stream until it ends. Silence for two and a half heartbeats means a dead
   * connection (a proxy that holds it open, a network gone): it is dropped and made again.
   */
  private async follow(connected: () => void): Promise<void> {
    const session = this.session as { id: string; announced: boolean };
    const abort = new AbortController();
    let silence = (this.ready?.heartbeat_ms ?? 15_000) * 2.5;
    let watchdog: NodeJS.Timeout | undefined;
    const alive = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => abort.abort(), silence);
    };
    let ended: string | undefined;
    try {
      alive();
      const response = await this.api.stream(
        `/_sandbox/listeners/${segment(session.id)}/stream`,
        abort.signal,
      );
      connected();
      await readEvents(response, {
        onBytes: alive,
        onEvent: (event, data) => {
          if (event === 'ready') {
            const ready = messageOf(ReadyMessageSchema, event, data);
            if (!ready) return;
            this.ready = ready;
            silence = ready.heartbeat_ms * 2.5;
            alive();
            if (!session.announced) say(this.readyLine(ready));
            session.announced = true;
          } else if (event === 'delivery') {
            // Nothing is forwarded before the session's secret is known to sign it with.
            const delivery = this.ready && messageOf(DeliveryMessageSchema, event, data);
            if (delivery)
              this.deliver(delivery).catch((error: unknown) =>
                say(
                  `Could not forward ${delivery.id}: ${error instanceof Error ? error.message : String(error)}`,
                ),
              );
          } else if (event === 'ended') {
            ended = messageOf(EndedMessageSchema, event, data)?.reason ?? 'the sandbox ended it';
            abort.abort();
          }
        },
        onComment: (comment) => {
          if (comment === 'heartbeat')
            this.api.post(`/_sandbox/listeners/${segment(session.id)}/heartbeat`).catch(() => undefined);
        },
      });
    } catch (error) {
      // Aborted for silence: as good as a closed connection.
      if (!abort.signal.aborted) throw error;
    } finally {
      clearTimeout(watchdog);
      abort.abort();
    }
    if (ended !== undefined) throw new SessionEnded(ended);
  }

  private readyLine(ready: ReadyMessage): string {
    const events = ready.events.length === EVENT_TYPES.length ? 'every event' : ready.events.join(', ');
    const { forwardTo } = this.settings;
    const what = forwardTo ? `Forwarding ${events} to ${forwardTo}` : `Printing ${events}`;
    return `Ready! ${what} (${ready.id}; Ctrl-C to stop); signing secret ${ready.secret}`;
  }

  /** One delivery: forwarded (or printed) once, its answer reported, and reported again if sent again. */
  private async deliver(delivery: DeliveryMessage): Promise<void> {
    const known = this.answered.get(delivery.id);
    if (known) return this.report(delivery, known);
    if (this.forwarding.has(delivery.id)) return;
    this.forwarding.add(delivery.id);
    const outcome = await this.forwards(() => this.forward(delivery)).finally(() =>
      this.forwarding.delete(delivery.id),
    );
    this.answered.set(delivery.id, outcome);
    if (this.answered.size > REMEMBERED) this.answered.delete(this.answered.keys().next().value as string);
    await this.report(delivery, outcome);
  }

  private async forward(delivery: DeliveryMessage): Promise<DeliveryOutcomeInput> {
    const { forwardTo, verifyTls } = this.settings;
    const ready = this.ready as ReadyMessage;
    const retry = delivery.attempt > 0 ? ` (retry ${delivery.attempt})` : '';
    if (forwardTo === null) {
      if (this.out.mode === 'json') process.stdout.write(`${delivery.body.trim()}\n`);
      else
        process.stdout.write(`${delivery.sent_at}  --> ${delivery.event} [${delivery.event_id}]${retry}\n`);
      return { response_status: null, duration_ms: 0, error: null };
    }
    if (this.out.mode === 'pretty')
      process.stdout.write(`${delivery.sent_at}  --> ${delivery.event} [${delivery.event_id}]${retry}\n`);
    const result = await sendDelivery(
      {
        url: forwardTo,
        secret: ready.secret,
        body: delivery.body,
        eventId: delivery.event_id,
        attempt: delivery.attempt,
        timeoutMs: ready.timeout_ms,
        verifyTls,
      },
      {
        // The developer's own URL, from their own machine: no address is refused.
        destinations: new DestinationPolicy({ targets: 'local', allowHosts: [new URL(forwardTo).hostname] }),
        resolve: systemResolver,
      },
    );
    // Only a stopping sandbox cuts a send off; this command never asks to.
    const answer = result === CUT_OFF ? undefined : result;
    // Reported as the sandbox can keep it: a NUL in the answer (a gzip header has one) is refused there.
    const text = (value: string | null | undefined) => (value == null ? null : storableText(value));
    const outcome: DeliveryOutcomeInput = {
      response_status: answer?.responseStatus ?? null,
      response_excerpt: text(answer?.responseExcerpt),
      duration_ms: answer?.durationMs ?? 0,
      error: answer ? answer.error : 'connection',
      error_message: answer ? text(answer.errorMessage) : 'cut off',
    };
    this.out.item(
      {
        id: delivery.id,
        listener_id: delivery.listener_id,
        event_id: delivery.event_id,
        event: delivery.event,
        attempt: delivery.attempt,
        sent_at: delivery.sent_at,
        forward_to: forwardTo,
        response_status: outcome.response_status,
        duration_ms: outcome.duration_ms,
        error: outcome.error ?? null,
        error_message: outcome.error_message ?? null,
      },
      (line) => {
        const status = line.response_status ?? 'ERR';
        const why = line.error && line.error !== 'http' ? `  ${line.error}: ${line.error_message}` : '';
        return `${line.sent_at}  <-- [${status}] ${line.event} [${line.event_id}] POST ${forwardTo} (${line.duration_ms} ms)${why}`;
      },
    );
    return outcome;
  }

  /**
   * Tells the sandbox the answer, trying again a few times while it cannot answer (a moment without
   * its database): the sandbox sends a delivery again only on a new connection, so an answer dropped
   * while this one stays up would leave the delivery unanswered. One still not told is told when the
   * delivery comes again.
   */
  private async report(delivery: DeliveryMessage, outcome: DeliveryOutcomeInput): Promise<void> {
    const path = `/_sandbox/listeners/${segment(delivery.listener_id)}/deliveries/${segment(delivery.id)}/outcome`;
    for (let tries = 0; ; tries++) {
      try {
        await this.api.post(path, outcome);
        return;
      } catch (error) {
        if (error instanceof SandboxError && error.status < 500) {
          say(`The sandbox refused the answer to ${delivery.id}: ${error.message}`);
          return;
        }
        if (!(error instanceof UnreachableError || error instanceof SandboxError)) throw error;
        const pause = REPORT_PAUSES_MS[tries];
        if (pause === undefined) {
          say(
            `Could not tell the sandbox the answer to ${delivery.id} (${error.message}); it is told when the delivery comes again.`,
          );
          return;
        }
        await sleep(pause);
      }
    }
  }
}

/** A message of the stream as its schema says, or nothing (said on stderr) when it is not one. */
function messageOf<T>(schema: z.ZodType<T>, event: string, data: string): T | undefined {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    json = undefined;
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  say(`Ignored a ${event} message the sandbox sent that this command cannot read.`);
  return undefined;
}

/** A line about the session, on stderr: stdout keeps the deliveries. */
function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** `localhost:3000/webhooks` as `stripe listen` takes it: http:// when no scheme is written. */
function parseForwardUrl(text: string): string {
  const written = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  let url: URL;
  try {
    url = new URL(written);
  } catch {
    throw new InvalidArgumentError('Not a URL: give one such as http://localhost:3000/webhooks.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new InvalidArgumentError('Not an http:// or https:// URL.');
  return url.toString();
}
