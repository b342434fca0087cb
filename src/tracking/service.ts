import type { Logger } from 'pino';
import type { Actor } from '../core/actor.js';
import type { Sql } from '../db/sql.js';
import type { EventStore } from '../events/store.js';
import type { LabelRecord, LabelStore } from '../labels/store.js';
import type { ScenarioCatalog } from '../scenarios/catalog.js';
import type { TrackingStatus } from '../scenarios/vocabulary.js';
import type { ChainedItem, Job } from '../scheduler/queue.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { ShipmentRecord, ShipmentStore } from '../shipments/store.js';
import { TRACKING_STEP, type TrackingJobPayload } from './chain.js';
import { TrackingControls } from './controls.js';
import { findMagicTrackingNumber, magicTimeline } from './magic-numbers.js';
import { TrackingPlanner } from './planner.js';
import { presentMagicTracking, presentTracking, type TrackingRecord } from './presentation.js';
import { TrackingSteps } from './steps.js';
import type { TrackingStore } from './store.js';

export interface TrackingServiceDeps {
  db: Sql;
  store: TrackingStore;
  labels: LabelStore;
  shipments: ShipmentStore;
  events: EventStore;
  scheduler: Scheduler;
  scenarios: ScenarioCatalog;
  /** The scenario an account's new labels play (read through `q`, the label's transaction). */
  defaultScenarioOf: (q: Sql, accountId: string) => Promise<string>;
  /** `--seed`: the same seed gives the same journeys. */
  seed: string;
  logger: Logger;
}

/**
 * A parcel's life on the carrier's side: the scenario each label plays on its account's clock
 * (planned in planner.ts, played in steps.ts), the events it records, the shipment status they
 * imply, its record as the API shows it (presentation.ts), and QA's levers to force an outcome
 * (controls.ts).
 */
export class TrackingService {
  private readonly planner: TrackingPlanner;
  private readonly steps: TrackingSteps;
  private readonly controls: TrackingControls;

  constructor(private readonly deps: TrackingServiceDeps) {
    this.planner = new TrackingPlanner(deps);
    this.steps = new TrackingSteps({ ...deps, planner: this.planner });
    this.controls = new TrackingControls({ ...deps, planner: this.planner, steps: this.steps });
  }

  /** Stores each scenario's plan with this server's seed, before the first label needs one. */
  start(): Promise<void> {
    return this.planner.start();
  }

  /** A new label starts its account's default scenario (inside the label's transaction, `tx`). */
  async startDefault(tx: Sql, actor: Actor, label: LabelRecord, shipment: ShipmentRecord): Promise<void> {
    const name = await this.deps.defaultScenarioOf(tx, actor.accountId);
    const scenario = this.deps.scenarios.forNewLabel(name);
    if (scenario.name !== name)
      this.deps.logger.warn(
        { accountId: actor.accountId, scenario: name },
        'default scenario missing; playing standard',
      );
    await this.steps.startScenario(tx, actor, label, shipment, scenario);
  }

  /** A voided label's parcel does nothing more (inside the void's transaction, `tx`). */
  stop(tx: Sql, actor: Actor, labelId: string): Promise<void> {
    return this.deps.scheduler.cancel(tx, TRACKING_STEP, labelId, actor.now);
  }

  /** The scheduler's handler: a label's next scenario step falls due. */
  runScheduledStep(tx: Sql, job: Job<TrackingJobPayload>) {
    return this.steps.runScheduledStep(tx, job);
  }

  /** `GET /_sandbox/clock/due`: every step a pending job stands for. */
  upcomingOf(job: Job<TrackingJobPayload>): Promise<ChainedItem[]> {
    return this.planner.upcomingOf(job);
  }

  async present(label: LabelRecord): Promise<TrackingRecord> {
    return presentTracking(label, await this.deps.store.events(this.deps.db, label.id));
  }

  /** `GET /tracking/:n`: a magic number for anyone, else a label of the caller's account. */
  async get(actor: Actor, trackingNumber: string): Promise<TrackingRecord> {
    const magic =
      findMagicTrackingNumber(trackingNumber) &&
      magicTimeline(trackingNumber, this.deps.scenarios.map, this.deps.seed);
    if (magic) return presentMagicTracking(trackingNumber, magic);
    return this.present(await this.controls.labelByTrackingNumber(actor, trackingNumber));
  }

  labelByTrackingNumber(actor: Actor, trackingNumber: string): Promise<LabelRecord> {
    return this.controls.labelByTrackingNumber(actor, trackingNumber);
  }

  activeLabelOf(actor: Actor, shipmentId: string): Promise<LabelRecord> {
    return this.controls.activeLabelOf(actor, shipmentId);
  }

  switchScenario(actor: Actor, label: LabelRecord, name: string) {
    return this.controls.switchScenario(actor, label, name);
  }

  advance(actor: Actor, label: LabelRecord, target: TrackingStatus): Promise<TrackingRecord> {
    return this.controls.advance(actor, label, target);
  }

  overview(actor: Actor, shipmentId: string) {
    return this.controls.overview(actor, shipmentId);
  }

  appendCustomEvent(
    actor: Actor,
    label: LabelRecord,
    event: { status: TrackingStatus; description?: string | undefined; location?: string | undefined },
  ): Promise<TrackingRecord> {
    return this.controls.appendCustomEvent(actor, label, event);
  }
}
