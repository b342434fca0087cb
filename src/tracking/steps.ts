import type { Actor } from '../core/actor.js';
import { toJsonText } from '../core/json.js';
import { formatTimestamp } from '../core/time.js';
import { type Db, transaction } from '../db/database.js';
import type { EventStore } from '../events/store.js';
import type { LabelRecord, LabelStore } from '../labels/store.js';
import { findService } from '../rates/carriers.js';
import type { Scenario } from '../scenarios/files.js';
import type { TrackingStatus } from '../scenarios/vocabulary.js';
import type { Job } from '../scheduler/queue.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { ShipmentRecord, ShipmentStore } from '../shipments/store.js';
import { type ChainPayload, isChain, TRACKING_STEP, type TrackingJobPayload } from './chain.js';
import type { TrackingPlanner } from './planner.js';
import { presentTracking } from './presentation.js';
import type { TrackingDelivered } from './schema.js';
import type { TrackingEventRecord, TrackingStore } from './store.js';
import { estimatedDelivery, type TimelineStep } from './timeline.js';
import { isTrackable } from './transitions.js';

export interface TrackingStepsDeps {
  db: Db;
  store: TrackingStore;
  labels: LabelStore;
  shipments: ShipmentStore;
  events: EventStore;
  scheduler: Scheduler;
  planner: TrackingPlanner;
}

/** The contract: tracking statuses map onto the shipment's. */
function shipmentStatusFor(status: TrackingStatus): ShipmentRecord['status'] | undefined {
  if (status === 'delivered') return 'delivered';
  if (status === 'pre_transit') return undefined;
  return 'in_transit';
}

/**
 * The steps a label plays: starting a scenario (the steps already due at once, the rest as the
 * label's chain of jobs), running each step as it falls due, and what one tracking event implies.
 */
export class TrackingSteps {
  constructor(private readonly deps: TrackingStepsDeps) {}

  /**
   * Plays `scenario` for the label from now: steps already due are applied at once, the rest are
   * scheduled on the account's clock. Runs inside the caller's transaction. A label that already has
   * events skips the scenario's opening `pre_transit` step rather than repeating it.
   */
  startScenario(
    actor: Actor,
    label: LabelRecord,
    shipment: ShipmentRecord,
    scenario: Scenario,
  ): TimelineStep[] {
    const { scheduler, labels, store, planner } = this.deps;
    scheduler.cancel(TRACKING_STEP, label.id, actor.now);
    const plan = planner.planIdOf(scenario);
    const planned = planner.timelineFor(label, shipment, scenario, actor.now);
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
      planner.remember(label.id, payload, planned);
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
      const planned = this.deps.planner.chainTimeline(payload, label, shipment);
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
  applyEvent(actor: Actor, labelId: string, event: TrackingEventRecord): LabelRecord | undefined {
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
    const record = toJsonText(presentTracking(current, store.events(label.id)));
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
}

/** A step's event, without the rest of the step. */
export function eventOf(step: { status: TrackingStatus; description: string; location: string }) {
  return { status: step.status, description: step.description, location: step.location };
}
