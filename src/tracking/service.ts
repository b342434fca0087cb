import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { Actor } from '../core/actor.js';
import { ApiError, notFound } from '../core/errors.js';
import { toJsonText } from '../core/json.js';
import { formatTimestamp } from '../core/time.js';
import { type Db, transaction } from '../db/database.js';
import type { EventStore } from '../events/store.js';
import type { LabelRecord, LabelStore } from '../labels/store.js';
import { findService } from '../rates/carriers.js';
import type { ScenarioCatalog } from '../scenarios/catalog.js';
import type { Scenario } from '../scenarios/files.js';
import { TRACKING_STATUSES, type TrackingStatus } from '../scenarios/vocabulary.js';
import { type ChainedItem, type Job, type Scheduler, snakeCaseKeys } from '../scheduler/scheduler.js';
import type { ShipmentRecord, ShipmentStore } from '../shipments/store.js';
import { findMagicTrackingNumber, magicTimeline } from './magic-numbers.js';
import type { TrackingDelivered } from './schema.js';
import type { TrackingEventRecord, TrackingPlan, TrackingStore } from './store.js';
import { estimatedDelivery, planTimeline, type TimelineInput, type TimelineStep } from './timeline.js';

/** The scheduler's job kind for a label's scenario steps. */
export const TRACKING_STEP = 'tracking.step';

/**
 * A label's next scenario step, and through it the steps after it: a label keeps one pending job,
 * not one a step (a dozen rows and their index entries, most of a label's share of the database).
 * The steps are derived when needed, the same pure function of the label, its shipment, the time the
 * scenario started and the plan (the seed and the scenario, kept in `tracking_plans`) that planned
 * them at the start; the job chain (`Scheduler.startChain`) keeps each step's place and identifier.
 */
export interface ChainPayload {
  plan: number;
  startedAt: number;
  index: number;
}

/**
 * A job of one step, as every step was scheduled before chains: data directories from then may
 * still hold them, and they run as they are.
 */
export interface StepPayload {
  labelId: string;
  scenario: string;
  index: number;
  status: TrackingStatus;
  description: string;
  location: string;
}

export type TrackingJobPayload = ChainPayload | StepPayload;

const isChain = (payload: TrackingJobPayload): payload is ChainPayload => 'plan' in payload;

/** A step still to come, and the pending job it belongs to (`ahead` places along its chain). */
interface PendingStep {
  job: Job<TrackingJobPayload>;
  ahead: number;
  scenario: string;
  index: number;
  status: TrackingStatus;
  description: string;
  location: string;
  dueAt: number;
}

/** The specification's Tracking record. */
export interface TrackingRecord {
  tracking_number: string;
  carrier: string;
  status: TrackingStatus;
  estimated_delivery: string;
  events: { status: TrackingStatus; description: string; location: string; occurred_at: string }[];
}

export interface TrackingServiceDeps {
  db: Db;
  store: TrackingStore;
  labels: LabelStore;
  shipments: ShipmentStore;
  events: EventStore;
  scheduler: Scheduler;
  scenarios: ScenarioCatalog;
  /** The scenario an account's new labels play. */
  defaultScenarioOf: (accountId: string) => string;
  /** `--seed`: the same seed gives the same journeys. */
  seed: string;
  logger: Logger;
}

/** The contract: tracking statuses map onto the shipment's. */
function shipmentStatusFor(status: TrackingStatus): ShipmentRecord['status'] | undefined {
  if (status === 'delivered') return 'delivered';
  if (status === 'pre_transit') return undefined;
  return 'in_transit';
}

/**
 * A parcel's life on the carrier's side: the scenario each label plays on its account's clock, the
 * events it records, the shipment status they imply, and QA's levers to force an outcome.
 */
export class TrackingService {
  /** Each scenario's plan with this server's seed, stored at start (never in a transaction that may roll back). */
  private readonly planIds = new Map<Scenario, number>();
  /** Plans by id, read once each (those of earlier runs included). */
  private readonly plans = new Map<number, TrackingPlan>();
  /**
   * The timelines of the chains run most recently, so that an advance over the steps of a few
   * thousand labels plans each once rather than once a step (about 1 KiB each).
   */
  private readonly timelines = new LRUCache<string, TimelineStep[]>({ max: 2048 });

  constructor(private readonly deps: TrackingServiceDeps) {
    for (const scenario of deps.scenarios.all()) {
      const plan = { seed: deps.seed, scenario };
      const id = deps.store.planIdOf(plan);
      this.planIds.set(scenario, id);
      this.plans.set(id, plan);
    }
  }

  /** A new label starts its account's default scenario (inside the label's transaction). */
  startDefault(actor: Actor, label: LabelRecord, shipment: ShipmentRecord): void {
    const name = this.deps.defaultScenarioOf(actor.accountId);
    const scenario = this.deps.scenarios.forNewLabel(name);
    if (scenario.name !== name)
      this.deps.logger.warn(
        { accountId: actor.accountId, scenario: name },
        'default scenario missing; playing standard',
      );
    this.startScenario(actor, label, shipment, scenario);
  }

  /** A voided label's parcel does nothing more. */
  stop(actor: Actor, labelId: string): void {
    this.deps.scheduler.cancel(TRACKING_STEP, labelId, actor.now);
  }

  private timelineFor(
    label: LabelRecord,
    shipment: ShipmentRecord,
    scenario: Scenario,
    startedAt: number,
    seed = this.deps.seed,
    after?: TimelineInput['after'],
  ) {
    return planTimeline(
      {
        seed,
        labelId: label.id,
        carrier: label.carrier,
        from: shipment.from,
        to: shipment.to,
        startedAt,
        after,
      },
      scenario,
    );
  }

  /** The whole timeline a chain's steps come from, as it was planned when its scenario started. */
  private chainTimeline(
    payload: ChainPayload,
    label: LabelRecord,
    shipment: ShipmentRecord,
  ): { scenario: Scenario; timeline: TimelineStep[] } | undefined {
    let plan = this.plans.get(payload.plan);
    if (!plan) {
      plan = this.deps.store.plan(payload.plan);
      if (!plan) return undefined;
      this.plans.set(payload.plan, plan);
    }
    const key = timelineKey(label.id, payload);
    let timeline = this.timelines.get(key);
    if (!timeline) {
      timeline = this.timelineFor(label, shipment, plan.scenario, payload.startedAt, plan.seed);
      this.timelines.set(key, timeline);
    }
    return { scenario: plan.scenario, timeline };
  }

  /** The steps a pending job stands for: its own, and for a chain every later one. */
  private stepsOf(
    job: Job<TrackingJobPayload>,
    label: LabelRecord | undefined,
    shipment: ShipmentRecord | undefined,
  ): PendingStep[] {
    const { payload } = job;
    if (!isChain(payload)) return [{ job, ahead: 0, ...payload, dueAt: job.dueAt }];
    const planned = label && shipment && this.chainTimeline(payload, label, shipment);
    if (!planned) return [];
    return planned.timeline.slice(payload.index).map((step, ahead) => ({
      job,
      ahead,
      scenario: planned.scenario.name,
      index: step.index,
      status: step.status,
      description: step.description,
      location: step.location,
      dueAt: step.occurredAt,
    }));
  }

  /** The label's steps still to come, soonest first (at equal times, in the order they will run). */
  private pendingSteps(label: LabelRecord, shipment: ShipmentRecord | undefined): PendingStep[] {
    return this.deps.scheduler
      .pending<TrackingJobPayload>(TRACKING_STEP, label.id)
      .flatMap((job) => this.stepsOf(job, label, shipment))
      .sort((a, b) => a.dueAt - b.dueAt || a.job.seq + a.ahead - (b.job.seq + b.ahead));
  }

  /** `GET /_sandbox/clock/due`: every step a pending job stands for, in the words of a step's payload. */
  upcomingOf(job: Job<TrackingJobPayload>): ChainedItem[] {
    if (!isChain(job.payload)) return [{ ahead: 0, dueAt: job.dueAt, detail: snakeCaseKeys(job.payload) }];
    const label = this.deps.labels.find(job.accountId, job.subject);
    const shipment = label && this.deps.shipments.find(job.accountId, label.shipmentId);
    const steps = this.stepsOf(job, label, shipment);
    if (steps.length === 0) {
      return [{ ahead: 0, dueAt: job.dueAt, detail: { label_id: job.subject, index: job.payload.index } }];
    }
    return steps.map((step) => ({
      ahead: step.ahead,
      dueAt: step.dueAt,
      detail: {
        label_id: job.subject,
        scenario: step.scenario,
        index: step.index,
        status: step.status,
        description: step.description,
        location: step.location,
      },
    }));
  }

  /**
   * Plays `scenario` for the label from now: steps already due are applied at once, the rest are
   * scheduled on the account's clock. Runs inside the caller's transaction. A label that already has
   * events skips the scenario's opening `pre_transit` step rather than repeating it.
   */
  private startScenario(
    actor: Actor,
    label: LabelRecord,
    shipment: ShipmentRecord,
    scenario: Scenario,
  ): TimelineStep[] {
    const { scheduler, labels, store } = this.deps;
    scheduler.cancel(TRACKING_STEP, label.id, actor.now);
    const plan = this.planIds.get(scenario);
    if (plan === undefined) throw new Error(`scenario '${scenario.name}' has no plan`);
    const planned = this.timelineFor(label, shipment, scenario, actor.now);
    let timeline = planned;
    const serviceDays = findService(shipment.carrier, shipment.service)?.estimated_days ?? 5;
    labels.setScenario(
      label.id,
      scenario.name,
      estimatedDelivery(timeline, scenario, actor.now, serviceDays),
    );
    if (store.hasEvents(label.id) && timeline[0]?.status === 'pre_transit') timeline = timeline.slice(1);

    // Times never go back, so the steps already due come first; the rest become the label's chain.
    const due = timeline.filter((step) => step.occurredAt <= actor.now);
    for (const step of due)
      this.applyEvent({ accountId: actor.accountId, now: step.occurredAt }, label.id, step);
    const next = timeline[due.length];
    if (next) {
      const payload: ChainPayload = { plan, startedAt: actor.now, index: next.index };
      scheduler.startChain(
        {
          accountId: actor.accountId,
          kind: TRACKING_STEP,
          subject: label.id,
          payload,
          dueAt: next.occurredAt,
          now: actor.now,
        },
        timeline.length - due.length,
      );
      this.timelines.set(timelineKey(label.id, payload), planned);
    }
    return timeline;
  }

  /** The scheduler's handler: a label's next scenario step falls due; a chain adds the one after it. */
  runScheduledStep(job: Job<TrackingJobPayload>) {
    return transaction(this.deps.db, () => {
      const { payload } = job;
      const at = { accountId: job.accountId, now: job.dueAt };
      if (!isChain(payload)) {
        const applied = this.applyEvent(at, payload.labelId, { ...eventOf(payload), occurredAt: job.dueAt });
        return applied
          ? { tracking_number: applied.trackingNumber, status: payload.status }
          : { skipped: true };
      }
      const label = this.deps.labels.find(job.accountId, job.subject);
      const shipment = label && this.deps.shipments.find(job.accountId, label.shipmentId);
      if (!label || !shipment || !isTrackable(label, shipment)) return { skipped: true };
      const planned = this.chainTimeline(payload, label, shipment);
      const step = planned?.timeline[payload.index];
      if (!planned || !step)
        throw new Error(`label ${label.id} has no step ${payload.index} in plan ${payload.plan}`);
      const applied = this.record(at, label, shipment, { ...eventOf(step), occurredAt: job.dueAt });
      const following = planned.timeline[payload.index + 1];
      if (following) {
        this.deps.scheduler.continueChain<ChainPayload>(job, 1, {
          payload: { ...payload, index: following.index },
          dueAt: following.occurredAt,
          now: payload.startedAt,
        });
      }
      return { tracking_number: applied.trackingNumber, status: step.status };
    });
  }

  /**
   * Records one tracking event and everything it implies, in the caller's transaction: the label's
   * status and first scan, the shipment's status, and the events `tracking.updated` (always),
   * `tracking.delivered` and `tracking.exception`. A voided label or a cancelled shipment takes no
   * more events.
   */
  private applyEvent(actor: Actor, labelId: string, event: TrackingEventRecord): LabelRecord | undefined {
    const label = this.deps.labels.find(actor.accountId, labelId);
    const shipment = label && this.deps.shipments.find(actor.accountId, label.shipmentId);
    if (!label || !shipment || !isTrackable(label, shipment)) return undefined;
    return this.record(actor, label, shipment, event);
  }

  /** `applyEvent` for a label and shipment already read and trackable. */
  private record(
    actor: Actor,
    label: LabelRecord,
    shipment: ShipmentRecord,
    event: TrackingEventRecord,
  ): LabelRecord {
    const { labels, shipments, store, events } = this.deps;
    store.append(actor.accountId, label.id, event);
    labels.setTrackingStatus(label.id, event.status);
    if (event.status !== 'pre_transit') labels.markScanned(label.id, event.occurredAt);
    // A delivered shipment stays delivered, whatever is played on its tracking afterwards.
    const shipmentStatus = shipmentStatusFor(event.status);
    if (shipmentStatus && shipmentStatus !== shipment.status && shipment.status !== 'delivered') {
      shipments.setStatus(shipment, shipmentStatus);
    }

    let current: LabelRecord = { ...label, trackingStatus: event.status };
    // Delivered, the estimate is the delivery itself, however the parcel got there (a forced advance, a
    // custom event), not a date the scenario had planned for later.
    if (event.status === 'delivered' && label.estimatedDelivery !== event.occurredAt) {
      labels.setEstimate(label.id, event.occurredAt);
      current = { ...current, estimatedDelivery: event.occurredAt };
    }
    const record = toJsonText(this.present(current));
    events.record(actor.accountId, 'tracking.updated', record, actor.now);
    if (event.status === 'delivered') {
      const delivered: TrackingDelivered = {
        tracking_number: label.trackingNumber,
        carrier: label.carrier,
        status: 'delivered',
        delivered_at: formatTimestamp(event.occurredAt),
      };
      events.record(actor.accountId, 'tracking.delivered', toJsonText(delivered), actor.now);
    }
    if (event.status === 'exception') events.record(actor.accountId, 'tracking.exception', record, actor.now);
    return current;
  }

  present(label: LabelRecord): TrackingRecord {
    const events = this.deps.store.events(label.id);
    return {
      tracking_number: label.trackingNumber,
      carrier: label.carrier,
      status: events[0]?.status ?? 'pre_transit',
      estimated_delivery: formatTimestamp(label.estimatedDelivery ?? label.createdAt),
      events: events.map((event) => ({
        status: event.status,
        description: event.description,
        location: event.location,
        occurred_at: formatTimestamp(event.occurredAt),
      })),
    };
  }

  /** `GET /tracking/:n`: a magic number for anyone, else a label of the caller's account. */
  get(actor: Actor, trackingNumber: string): TrackingRecord {
    const magic =
      findMagicTrackingNumber(trackingNumber) &&
      magicTimeline(trackingNumber, this.deps.scenarios.map, this.deps.seed);
    if (magic) {
      const events = [...magic.steps].reverse();
      return {
        tracking_number: trackingNumber,
        carrier: magic.carrier,
        status: events[0]?.status ?? 'pre_transit',
        estimated_delivery: formatTimestamp(magic.estimatedDelivery),
        events: events.map((step) => ({
          status: step.status,
          description: step.description,
          location: step.location,
          occurred_at: formatTimestamp(step.occurredAt),
        })),
      };
    }
    return this.present(this.labelByTrackingNumber(actor, trackingNumber));
  }

  labelByTrackingNumber(actor: Actor, trackingNumber: string): LabelRecord {
    const label = this.deps.labels.findByTrackingNumber(trackingNumber);
    if (!label || label.accountId !== actor.accountId) {
      throw new ApiError(
        404,
        'not_found',
        `No label with tracking number '${trackingNumber}' exists in this account.`,
      );
    }
    return label;
  }

  /** The shipment's current label, which the tracking controls act on. */
  activeLabelOf(actor: Actor, shipmentId: string): LabelRecord {
    const shipment = this.deps.shipments.find(actor.accountId, shipmentId);
    if (!shipment) throw notFound('shipment', shipmentId);
    const label =
      shipment.labelId === null ? undefined : this.deps.labels.find(actor.accountId, shipment.labelId);
    if (!label) {
      throw new ApiError(
        422,
        'no_active_label',
        `Shipment ${shipmentId} has no active label; generate one first.`,
      );
    }
    return label;
  }

  private assertTrackable(actor: Actor, label: LabelRecord): ShipmentRecord {
    const shipment = this.deps.shipments.find(actor.accountId, label.shipmentId);
    if (!shipment) throw notFound('shipment', label.shipmentId);
    if (!isTrackable(label, shipment)) {
      throw new ApiError(
        422,
        'no_active_label',
        `Label ${label.id} is voided or its shipment cancelled; its tracking no longer changes.`,
      );
    }
    return shipment;
  }

  /** `POST /_sandbox/…/scenario`: drops the label's pending steps and plays another scenario from now. */
  switchScenario(actor: Actor, label: LabelRecord, name: string) {
    const scenario = this.deps.scenarios.find(name);
    return transaction(this.deps.db, () => {
      const shipment = this.assertTrackable(actor, label);
      const steps = this.startScenario(actor, label, shipment, scenario);
      return {
        shipment_id: shipment.id,
        tracking_number: label.trackingNumber,
        scenario: scenario.name,
        steps: steps.map((step) => ({
          status: step.status,
          description: step.description,
          location: step.location,
          occurred_at: formatTimestamp(step.occurredAt),
        })),
      };
    });
  }

  /**
   * `POST /_sandbox/…/advance`: plays every step up to the first one with `target`, at once, stamped
   * now and in order. The scenario's own pending steps are used when they lead to `target`, and the
   * rest of the scenario goes on afterwards; otherwise the intermediate statuses are made up and the
   * scenario stops (it no longer describes the parcel). Terminal statuses end the scenario either way.
   */
  advance(actor: Actor, label: LabelRecord, target: TrackingStatus): TrackingRecord {
    const { db, scheduler } = this.deps;
    return transaction(db, () => {
      const shipment = this.assertTrackable(actor, label);
      const before = this.present(label);
      const current = before.status;
      const pending = this.pendingSteps(label, shipment);
      const reach = pending.findIndex((step) => step.status === target);

      let steps: { status: TrackingStatus; description: string; location: string }[];
      if (reach >= 0) {
        steps = pending.slice(0, reach + 1).map(eventOf);
        const played = new Set(pending.slice(0, reach + 1).map((step) => step.job));
        for (const job of played) scheduler.cancelJob(job.id, actor.now);
        if (TERMINAL.has(target)) {
          scheduler.cancel(TRACKING_STEP, label.id, actor.now);
        } else {
          // The rest of a chain whose pending job was played goes on from its next step.
          const rest = pending[reach + 1];
          if (rest && played.has(rest.job) && isChain(rest.job.payload)) {
            scheduler.continueChain<ChainPayload>(rest.job, rest.ahead, {
              payload: { ...rest.job.payload, index: rest.index },
              dueAt: rest.dueAt,
              now: rest.job.payload.startedAt,
            });
          }
        }
      } else {
        const path = pathBetween(current, target);
        if (!path) {
          throw new ApiError(
            422,
            'invalid_transition',
            `The parcel is ${current}; it cannot be advanced to ${target}.`,
            {
              field: 'status',
            },
          );
        }
        const forced: Scenario = {
          name: 'forced',
          description: 'forced by the sandbox',
          steps: path.map((status) => ({ afterMs: 0, status })),
        };
        // From where the parcel is now, worded for what it has been through (not from the sender's door).
        steps = this.timelineFor(label, shipment, forced, actor.now, this.deps.seed, before.events[0]);
        scheduler.cancel(TRACKING_STEP, label.id, actor.now);
      }
      let latest = label;
      for (const step of steps) {
        latest = this.applyEvent(actor, label.id, { ...step, occurredAt: actor.now }) ?? latest;
      }
      return this.present(latest);
    });
  }

  /**
   * `GET /_sandbox/shipments/:id/tracking`: the parcel as QA sees it: its record, the scenario it plays
   * and the steps still to come, and the statuses `advance` would accept now.
   */
  overview(actor: Actor, shipmentId: string) {
    const label = this.activeLabelOf(actor, shipmentId);
    const shipment = this.deps.shipments.find(actor.accountId, label.shipmentId);
    const record = this.present(label);
    const trackable = shipment !== undefined && isTrackable(label, shipment);
    const pending = trackable ? this.pendingSteps(label, shipment) : [];
    return {
      shipment_id: shipmentId,
      label_id: label.id,
      tracking_number: label.trackingNumber,
      scenario: label.scenario,
      tracking: record,
      upcoming: pending.map((step) => ({
        status: step.status,
        description: step.description,
        location: step.location,
        due_at: formatTimestamp(step.dueAt),
      })),
      can_advance_to: trackable
        ? TRACKING_STATUSES.filter(
            (target) =>
              pending.some((step) => step.status === target) ||
              pathBetween(record.status, target) !== undefined,
          )
        : [],
    };
  }

  /** `POST /_sandbox/tracking/:n/events`: a custom event, now, as if the carrier had sent it. */
  appendCustomEvent(
    actor: Actor,
    label: LabelRecord,
    event: { status: TrackingStatus; description?: string | undefined; location?: string | undefined },
  ): TrackingRecord {
    return transaction(this.deps.db, () => {
      const shipment = this.assertTrackable(actor, label);
      const latest = this.deps.store.events(label.id)[0];
      const applied = this.applyEvent(actor, label.id, {
        status: event.status,
        description: event.description ?? defaultDescription(event.status),
        location: event.location ?? latest?.location ?? `${shipment.from.city}, ${shipment.from.country}`,
        occurredAt: actor.now,
      });
      if (TERMINAL.has(event.status)) this.deps.scheduler.cancel(TRACKING_STEP, label.id, actor.now);
      return this.present(applied ?? label);
    });
  }
}

function timelineKey(labelId: string, chain: ChainPayload): string {
  return `${labelId} ${chain.plan} ${chain.startedAt}`;
}

/** A voided label or a cancelled shipment takes no more tracking events. */
function isTrackable(label: LabelRecord, shipment: ShipmentRecord): boolean {
  return label.status === 'active' && shipment.status !== 'cancelled';
}

function eventOf(step: { status: TrackingStatus; description: string; location: string }) {
  return { status: step.status, description: step.description, location: step.location };
}

/** The usual journey; `exception` and `returned` branch off it. */
const MAIN_LINE: readonly TrackingStatus[] = [
  'pre_transit',
  'accepted',
  'in_transit',
  'out_for_delivery',
  'delivered',
];
const TERMINAL: ReadonlySet<TrackingStatus> = new Set(['delivered', 'returned']);

/**
 * The statuses between `current` and `target` that a forced advance plays, when the scenario does not
 * lead there itself. An exception sits beside the main line (the parcel resumes from `in_transit`);
 * a return always passes through an exception first.
 */
function pathBetween(current: TrackingStatus, target: TrackingStatus): TrackingStatus[] | undefined {
  if (TERMINAL.has(current)) return undefined;
  if (target === 'exception') return current === 'exception' ? undefined : ['exception'];
  if (target === 'returned') return current === 'exception' ? ['returned'] : ['exception', 'returned'];
  const from = current === 'exception' ? MAIN_LINE.indexOf('in_transit') : MAIN_LINE.indexOf(current);
  const to = MAIN_LINE.indexOf(target);
  return to > from ? MAIN_LINE.slice(from + 1, to + 1) : undefined;
}

function defaultDescription(status: TrackingStatus): string {
  return status
    .split('_')
    .map((word, i) => (i === 0 ? word[0]?.toUpperCase() + word.slice(1) : word))
    .join(' ');
}
