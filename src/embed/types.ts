/**
 * The public types of the package's in-process API (`import { startSandbox } from 'shipping-sandbox'`).
 * They are written out here, apart from the zod schemas, so the published declarations stand alone: they
 * name no file of `src/` that the package does not ship and no library a merchant does not install.
 * `test/embed.test.ts` holds each to the schema of the route it mirrors, so they cannot drift.
 */

/** A number of seconds, or a string such as `"90s"`, `"5m"`, `"2h"`, `"3d"`. */
export type Duration = number | string;

export type Plan = 'starter' | 'growth' | 'enterprise';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** The specification's tracking statuses. */
export type TrackingStatus =
  | 'pre_transit'
  | 'accepted'
  | 'in_transit'
  | 'out_for_delivery'
  | 'delivered'
  | 'exception'
  | 'returned';

/** The specification's webhook events. */
export type WebhookEventType =
  | 'shipment.created'
  | 'shipment.cancelled'
  | 'label.generated'
  | 'label.voided'
  | 'tracking.updated'
  | 'tracking.delivered'
  | 'tracking.exception';

export interface SandboxOptions {
  /**
   * Keep the sandbox's database in this directory (created if missing), so it outlives the process.
   * Without it everything is in memory and lost at `stop()`. One sandbox at a time may use a directory.
   */
  dataDir?: string;
  /**
   * Keep everything in this PostgreSQL database instead (`postgres://user:password@host:5432/db`; the
   * command line's `--database`). Several sandboxes, in this process or others, over the same database
   * act as one. Not with `dataDir`.
   */
  database?: string;
  /** Seed of generated data (names, places, timelines): the same seed gives the same data. */
  seed?: string;
  /** Initial speed of account clocks: 1 is real time (the default), 3600 an hour a second. */
  clockSpeed?: number;
  /** The plan of the sandbox's account (and the default of `createAccount()`); `growth` by default. */
  plan?: Plan;
  /**
   * Listen over HTTPS too (not by default): `true` for a free port and a certificate for `localhost`
   * made once and kept in a per-user temporary folder (or in `dataDir`), or the port and PEM files.
   */
  https?: boolean | { port?: number; cert?: string; key?: string };
  /** The server's log lines on stdout, from this level up; `warn` by default. */
  logLevel?: LogLevel;
  /** A directory of your own scenario files (YAML or JSON) beside the built-in ones. */
  scenariosDir?: string;
  /** The HTTP port on 127.0.0.1; a free one by default. */
  port?: number;
  /** How long a webhook receiver may take to answer, in real time; `10s` by default. */
  webhookTimeout?: Duration;
  /** Delays before each retry of a failed delivery, on the account clock; `[]` for no retries. */
  webhookRetries?: readonly Duration[];
  /**
   * Where webhooks may deliver: `local` (the default: loopback and private networks too) or `public`.
   */
  webhookTargets?: 'local' | 'public';
  /** Hosts webhooks may deliver to whatever `webhookTargets` says. */
  webhookAllowHosts?: readonly string[];
  /** `false` switches the rate limits off for every account (the headers are still sent). */
  rateLimits?: boolean;
  /** Worker threads that render PDF and PNG labels (started on the first render); 0 renders inline. */
  renderThreads?: number;
}

/** `{ "amount": "12.40", "currency": "USD" }` */
export interface Money {
  amount: string;
  currency: string;
}

export interface ClockState {
  /** The account clock's present, `2026-11-22T08:23:14Z`. */
  now: string;
  speed: number;
  frozen: boolean;
}

export interface AdvancedClock extends ClockState {
  /** What ran on the way, in time order: tracking steps, webhook attempts. */
  ran: Array<{ kind: string; due_at: string; [detail: string]: unknown }>;
}

/** The account's clock. Every method acts at once and resolves when the sandbox has answered. */
export interface SandboxClock {
  /** The clock's present, `2026-11-22T08:23:14Z`. */
  now(): Promise<string>;
  read(): Promise<ClockState>;
  /** Moves the clock forward and runs everything that falls due, webhook sends included. */
  advance(by: Duration): Promise<AdvancedClock>;
  /** Moves the clock forward to an instant (never backwards), running everything due by then. */
  advanceTo(instant: string | Date): Promise<AdvancedClock>;
  freeze(): Promise<ClockState>;
  unfreeze(): Promise<ClockState>;
  /** 1 is real time, 3600 an hour a second. */
  setSpeed(speed: number): Promise<ClockState>;
}

export interface TrackingEvent {
  status: TrackingStatus;
  description: string;
  location: string;
  occurred_at: string;
}

/** `GET /v1/tracking/:tracking_number`'s record. */
export interface TrackingRecord {
  tracking_number: string;
  carrier: string;
  status: TrackingStatus;
  estimated_delivery: string;
  /** Newest first. */
  events: TrackingEvent[];
}

/** A scenario started for a shipment: the steps it will play on the account clock. */
export interface ScenarioRun {
  shipment_id: string;
  tracking_number: string;
  scenario: string;
  steps: TrackingEvent[];
}

/** An e-mail of the sandbox's outbox (a webhook that failed for good, say). */
export interface Email {
  id: string;
  to: string;
  subject: string;
  body: string;
  created_at: string;
}

/** The envelope every webhook delivery carries, exactly as the receiver gets it. */
export interface EventEnvelope<E extends WebhookEventType = WebhookEventType> {
  id: string;
  event: E;
  created_at: string;
  data: unknown;
}

/** One try at delivering an event to a webhook, as `GET /_sandbox/webhooks/:id/deliveries` lists it. */
export interface DeliveryAttempt {
  id: string;
  webhook_id: string;
  event_id: string;
  event: WebhookEventType;
  /** 0 for the first try, then 1, 2, … for the retries. */
  attempt: number;
  redelivery: boolean;
  status: 'scheduled' | 'sending' | 'succeeded' | 'failed' | 'cancelled';
  scheduled_at: string;
  sent_at: string | null;
  response_status: number | null;
  /** The first 1 KiB of the receiver's answer. */
  response_excerpt: string | null;
  duration_ms: number | null;
  error: 'timeout' | 'connection' | 'http' | 'destination_not_allowed' | null;
  error_message: string | null;
  next_attempt_at: string | null;
  /** Sent by `POST /_sandbox/webhooks/:id/probe`: counted only by the report's `verifies_signatures`. */
  probe: boolean;
  /** A probe's signature: correct (`genuine`) or deliberately wrong (`forged`); null for other deliveries. */
  probe_signature: 'genuine' | 'forged' | null;
}

/** A delivery attempt with the event it carried. */
export interface Delivery extends DeliveryAttempt {
  payload: EventEnvelope;
}

export interface DeliveryFilter {
  /** Only deliveries of this event. */
  event?: WebhookEventType;
  /** Only deliveries to this webhook (`wh_…`). */
  webhookId?: string;
  /** Only deliveries of this event id (`evt_…`). */
  eventId?: string;
  /** Any other test, on the attempt and the event it carries (`d.payload.data`). */
  where?: (delivery: Delivery) => boolean;
  /**
   * `final` (the default): the first try that got an outcome, whether it succeeded or failed.
   * `succeeded`: go on through the retries (moving the account clock to each) until one succeeds;
   * rejects once the retries are over.
   */
  until?: 'final' | 'succeeded';
  /** Real milliseconds to wait at most; 5000 by default. */
  timeout?: number;
}

/** One account of a running sandbox, its key, and the controls a test needs, acting as that account. */
export interface SandboxAccount {
  readonly accountId: string;
  /** A test key with every scope. */
  readonly apiKey: string;
  /** The QA dashboard signed in as this account (the key is in the fragment, never sent in a URL). */
  readonly dashboardUrl: string;
  readonly clock: SandboxClock;
  /**
   * Forces a shipment's tracking to a status, playing each step on the way (and their events and
   * webhooks): `POST /_sandbox/shipments/:id/advance`.
   */
  advanceShipment(shipmentId: string, status: TrackingStatus): Promise<TrackingRecord>;
  /** Plays another scenario for a shipment, from now: `POST /_sandbox/shipments/:id/scenario`. */
  runScenario(shipmentId: string, scenario: string): Promise<ScenarioRun>;
  /**
   * Resolves with a webhook delivery that matches the filter once it has an outcome, moving the
   * account clock to the retries it waits for. Each call resolves with a delivery (of an event to a
   * webhook) that no earlier call on this account resolved with, so consecutive tests each get their
   * own. Rejects after `timeout` real milliseconds, saying what it saw.
   */
  waitForDelivery(filter?: DeliveryFilter): Promise<Delivery>;
  /** The e-mail outbox, newest first. */
  emails(): Promise<Email[]>;
  /** The account as if new (its keys, plan and settings kept): `POST /_sandbox/reset`. */
  reset(): Promise<void>;
}

/** A sandbox running in this process: `await startSandbox()`. */
export interface Sandbox extends SandboxAccount {
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
  /** The API's base URL: `origin + '/v1'`. */
  readonly url: string;
  /** Present when started with `https`. */
  readonly https?: {
    origin: string;
    url: string;
    /** The PEM certificate to trust (`NODE_EXTRA_CA_CERTS`, `curl --cacert`). */
    certificatePath: string;
  };
  /** Another isolated account of the same sandbox, with its own key and clock. */
  createAccount(options?: { plan?: Plan; name?: string }): Promise<SandboxAccount>;
  /** Stops the server and closes its database; the process holds nothing of it afterwards. */
  stop(): Promise<void>;
}
