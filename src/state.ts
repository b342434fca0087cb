import type { Logger } from 'pino';
import { AccountStore } from './accounts/store.js';
import { type Job, Scheduler } from './clock/scheduler.js';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import { EventStore } from './events/store.js';
import { FaultStore } from './faults/store.js';
import { RateLimiter } from './http/rate-limit.js';
import { RequestJournal } from './journal/journal.js';
import { LabelFiles } from './labels/files.js';
import { createLabelRenderer } from './labels/render/pool.js';
import { UrlSigner } from './labels/signed-url.js';
import { LabelStore } from './labels/store.js';
import { BUILTIN_SCENARIOS_DIR, type Scenario } from './scenarios/files.js';
import { ShipmentStore } from './shipments/store.js';
import { runScheduledStep, type StepPayload, TRACKING_STEP } from './tracking/service.js';
import { TrackingStore } from './tracking/store.js';
import { WEBHOOK_ATTEMPT, WebhookDelivery } from './webhooks/delivery.js';
import { WebhookStore } from './webhooks/store.js';

/** Everything the domain code works on: the database, its stores and the settings. */
export interface State {
  db: Db;
  config: Config;
  accounts: AccountStore;
  shipments: ShipmentStore;
  events: EventStore;
  labels: LabelStore;
  labelFiles: LabelFiles;
  urlSigner: UrlSigner;
  scheduler: Scheduler;
  webhooks: WebhookStore;
  delivery: WebhookDelivery;
  tracking: TrackingStore;
  rateLimiter: RateLimiter;
  faults: FaultStore;
  journal: RequestJournal;
  /** The scenarios by name: the built-in ones and the user's (`--scenarios-dir`). */
  scenarios: ReadonlyMap<string, Scenario>;
  logger: Logger;
  /** The real wall clock that account clocks are derived from; tests replace it. */
  realNow: () => number;
}

export function createState(
  db: Db,
  config: Config,
  logger: Logger,
  scenarios: ReadonlyMap<string, Scenario>,
  realNow: () => number = Date.now,
): State {
  const accounts = new AccountStore(db);
  const scheduler = new Scheduler(db, accounts, logger, realNow);
  const webhooks = new WebhookStore(db);
  const delivery = new WebhookDelivery(db, webhooks, accounts, scheduler, config, logger);
  const state: State = {
    db,
    config,
    logger,
    realNow,
    accounts,
    scheduler,
    webhooks,
    delivery,
    shipments: new ShipmentStore(db),
    events: new EventStore(db),
    labels: new LabelStore(db),
    labelFiles: new LabelFiles(createLabelRenderer(config.renderThreads)),
    urlSigner: new UrlSigner(db),
    tracking: new TrackingStore(db),
    rateLimiter: new RateLimiter(),
    faults: new FaultStore(db),
    journal: new RequestJournal(),
    scenarios,
  };
  state.scheduler.register(TRACKING_STEP, (job: Job<StepPayload>) => runScheduledStep(state, job));
  state.scheduler.register(WEBHOOK_ATTEMPT, (job: Job<{ attemptId: string }>) => delivery.onDue(job));
  state.scheduler.addSettler((accountId) => delivery.settled(accountId));
  state.events.onRecorded((accountId, envelope, now) => delivery.fanOut(accountId, envelope, now));
  return state;
}

/** The built-in scenarios, then the user's directory, whose files replace built-in ones of the same name. */
export function scenarioDirectories(config: Config): string[] {
  return config.scenariosDir ? [BUILTIN_SCENARIOS_DIR, config.scenariosDir] : [BUILTIN_SCENARIOS_DIR];
}
