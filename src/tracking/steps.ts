import type { Actor } from '../core/actor.js';
import { toJsonText } from '../core/json.js';
import { formatTimestamp } from '../core/time.js';
import type { Sql } from '../db/sql.js';
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
  db: Sql;
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
   * scheduled on the account's clock. Runs inside the caller's transaction, `tx`. A label that
   * already has events skips the scenario's opening `pre_transit` step rather than repeating it.
   */
  async startScenario(
    tx: Sql,
    actor: Actor,
    label: LabelRecord,
    shipment: ShipmentRecord,
    scenario: Scenario,
  ): Promise<TimelineStep[]> {
    const { scheduler, labels, store, planner } = this.deps;
    await scheduler.cancel(tx, TRACKING_STEP, label.id, actor.now);
    const plan = planner.planIdOf(scenario);
    const planned = planner.timelineFor(label, shipment, scenario, actor.now);
    let timeline = planned;
    const serviceDays = findService(shipment.carrier, shipment.service)?.estimated_days ?? 5;
    await labels.setScenario(
      tx,
      label.id,
      scenario.name,
      estimatedDelivery(timeline, scenario, actor.now, serviceDays),
    );
    if (timeline[0]?.status === 'pre_transit' && (await store.hasEvents(tx, label.id)))
      timeline = timeline.slice(1);

    // Times never go back, so the steps already due come first; the rest become the label's chain.
    const due = timeline.filter((step) => step.occurredAt <= actor.now);
    for (const step of due)
      await this.applyEvent(tx, { accountId: actor.accountId, now: step.occurredAt }, label.id, step);
    const next = timeline[due.length];
    if (next) {
      const payload: ChainPayload = { plan, startedAt: actor.now, index: next.index };
      await scheduler.startChain(
        tx,
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
  async runScheduledStep(tx: Sql, job: Job<TrackingJobPayload>): Promise<Record<string, unknown>> {
    const { payload } = job;
    const at = { accountId: job.accountId, now: job.dueAt };
    if (!isChain(payload)) {
      const applied = await this.applyEvent(tx, at, payload.labelId, {
        ...eventOf(payload),
        occurredAt: job.dueAt,
      });
      return applied
        ? { tracking_number: applied.trackingNumber, status: payload.status }
        : { skipped: true };
    }
    const label = await this.deps.labels.findForUpdate(tx, job.accountId, job.subject);
    const shipment = label && (await this.deps.shipments.findForUpdate(tx, job.accountId, label.shipmentId));
    if (!label || !shipment || !isTrackable(label, shipment)) return { skipped: true };
    const planned = await this.deps.planner.chainTimeline(tx, payload, label, shipment);
    const step = planned?.timeline[payload.index];
    if (!planned || !step)
      throw new Error(`label ${label.id} has no step ${payload.index} in plan ${payload.plan}`);
    const applied = await this.record(tx, at, label, shipment, { ...eventOf(step), occurredAt: job.dueAt });
    const following = planned.timeline[payload.index + 1];
    if (following) {
      await this.deps.scheduler.continueChain<ChainPayload>(tx, job, 1, {
        payload: { ...payload, index: following.index },
        dueAt: following.occurredAt,
        now: payload.startedAt,
      });
    }
    return { tracking_number: applied.trackingNumber, status: step.status };
  }

  /**
   * Records one tracking event and everything it implies, in the caller's transaction: the label's
   * status and first scan, the shipment's status, and the events `tracking.updated` (always),
   * `tracking.delivered` and `tracking.exception`. A voided label or a cancelled shipment takes no
   * more events.
   */
  async applyEvent(
    tx: Sql,
    actor: Actor,
    labelId: string,
    event: TrackingEventRecord,
  ): Promise<LabelRecord | undefined> {
    const label = await this.deps.labels.findForUpdate(tx, actor.accountId, labelId);
    const shipment =
      label && (await this.deps.shipments.findForUpdate(tx, actor.accountId, label.shipmentId));
    if (!label || !shipment || !isTrackable(label, shipment)) return undefined;
    return this.record(tx, actor, label, shipment, event);
  }

  /** `applyEvent` for a label and shipment already read and trackable. */
  private async record(
    tx: Sql,
    actor: Actor,
    label: LabelRecord,
    shipment: ShipmentRecord,
    event: TrackingEventRecord,
  ): Promise<LabelRecord> {
    const { labels, shipments, store, events } = this.deps;
    await store.append(tx, actor.accountId, label.id, event);
    await labels.setTrackingStatus(tx, label.id, event.status);
    if (event.status !== 'pre_transit') await labels.markScanned(tx, label.id, event.occurredAt);
    // A delivered shipment stays delivered, whatever is played on its tracking afterwards.
    const shipmentStatus = shipmentStatusFor(event.status);
    if (shipmentStatus && shipmentStatus !== shipment.status && shipment.status !== 'delivered') {
      await shipments.setStatus(tx, shipment, shipmentStatus);
    }

    let current: LabelRecord = { ...label, trackingStatus: event.status };
    // Delivered, the estimate is the delivery itself, however the parcel got there (a forced advance, a
    // custom event), not a date the scenario had planned for later.
    if (event.status === 'delivered' && label.estimatedDelivery !== event.occurredAt) {
      await labels.setEstimate(tx, label.id, event.occurredAt);
      current = { ...current, estimatedDelivery: event.occurredAt };
    }
    const record = toJsonText(presentTracking(current, await store.events(tx, label.id)));
    await events.record(tx, actor.accountId, 'tracking.updated', record, actor.now);
    if (event.status === 'delivered') {
      const delivered: TrackingDelivered = {
        tracking_number: label.trackingNumber,
        carrier: label.carrier,
        status: 'delivered',
        delivered_at: formatTimestamp(event.occurredAt),
      };
      await events.record(tx, actor.accountId, 'tracking.delivered', toJsonText(delivered), actor.now);
    }
    if (event.status === 'exception')
      await events.record(tx, actor.accountId, 'tracking.exception', record, actor.now);
    return current;
  }
}

/** A step's event, without the rest of the step. */
export function eventOf(step: { status: TrackingStatus; description: string; location: string }) {
  return { status: step.status, description: step.description, location: step.location };
}
