import type { Job } from '../clock/scheduler.js';
import type { Actor } from '../core/actor.js';
import { ApiError, invalidField, notFound } from '../core/errors.js';
import { formatTimestamp } from '../core/time.js';
import { transaction } from '../db/database.js';
import type { LabelRecord } from '../labels/store.js';
import { findService } from '../rates/carriers.js';
import type { Scenario } from '../scenarios/files.js';
import type { TrackingStatus } from '../scenarios/vocabulary.js';
import type { ShipmentRecord } from '../shipments/store.js';
import type { State } from '../state.js';
import { findMagicTrackingNumber, magicTimeline } from './magic-numbers.js';
import type { TrackingEventRecord } from './store.js';
import { estimatedDelivery, planTimeline, type TimelineStep } from './timeline.js';

/** The scheduler's job kind for one scenario step of one label. */
export const TRACKING_STEP = 'tracking.step';

export interface StepPayload {
  labelId: string;
  scenario: string;
  index: number;
  status: TrackingStatus;
  description: string;
  location: string;
}

/** The specification's Tracking record. */
export interface TrackingRecord {
  tracking_number: string;
  carrier: string;
  status: TrackingStatus;
  estimated_delivery: string;
  events: { status: TrackingStatus; description: string; location: string; occurred_at: string }[];
}

/** The contract: tracking statuses map onto the shipment's. */
function shipmentStatusFor(status: TrackingStatus): ShipmentRecord['status'] | undefined {
  if (status === 'delivered') return 'delivered';
  if (status === 'pre_transit') return undefined;
  return 'in_transit';
}

export function findScenario(state: State, name: string, field = 'name'): Scenario {
  const scenario = state.scenarios.get(name);
  if (!scenario) {
    throw invalidField(
      field,
      `No scenario '${name}'. Available: ${[...state.scenarios.keys()].sort().join(', ')}.`,
    );
  }
  return scenario;
}

/**
 * The scenario a new label of the account plays. Its default may name a scenario that is gone (a
 * `--scenarios-dir` removed before a restart); then `standard` plays, rather than failing the label.
 */
export function defaultScenarioOf(state: State, accountId: string): Scenario {
  const name = state.accounts.find(accountId)?.defaultScenario ?? 'standard';
  const scenario = state.scenarios.get(name) ?? state.scenarios.get('standard');
  if (!scenario) throw new Error('the built-in standard scenario is missing');
  if (scenario.name !== name)
    state.logger.warn({ accountId, scenario: name }, 'default scenario missing; playing standard');
  return scenario;
}

function timelineFor(
  state: State,
  label: LabelRecord,
  shipment: ShipmentRecord,
  scenario: Scenario,
  startedAt: number,
) {
  return planTimeline(
    {
      seed: state.config.seed,
      labelId: label.id,
      carrier: label.carrier,
      from: shipment.from,
      to: shipment.to,
      startedAt,
    },
    scenario,
  );
}

/**
 * Plays `scenario` for the label from `startedAt`: steps already due are applied at once, the rest are
 * scheduled on the account's clock. Runs inside the caller's transaction. A label that already has
 * events skips the scenario's opening `pre_transit` step rather than repeating it.
 */
export function startScenario(
  state: State,
  actor: Actor,
  label: LabelRecord,
  shipment: ShipmentRecord,
  scenario: Scenario,
): TimelineStep[] {
  state.scheduler.cancel(TRACKING_STEP, label.id, actor.now);
  let timeline = timelineFor(state, label, shipment, scenario, actor.now);
  const serviceDays = findService(shipment.carrier, shipment.service)?.estimated_days ?? 5;
  state.tracking.setScenario(
    label.id,
    scenario.name,
    estimatedDelivery(timeline, scenario, actor.now, serviceDays),
  );
  if (state.tracking.hasEvents(label.id) && timeline[0]?.status === 'pre_transit')
    timeline = timeline.slice(1);

  for (const step of timeline) {
    const payload: StepPayload = {
      labelId: label.id,
      scenario: scenario.name,
      index: step.index,
      status: step.status,
      description: step.description,
      location: step.location,
    };
    if (step.occurredAt <= actor.now) {
      applyEvent(state, { accountId: actor.accountId, now: step.occurredAt }, label.id, step);
    } else {
      state.scheduler.schedule({
        accountId: actor.accountId,
        kind: TRACKING_STEP,
        subject: label.id,
        payload,
        dueAt: step.occurredAt,
        now: actor.now,
      });
    }
  }
  return timeline;
}

/** The scheduler's handler: one scenario step falls due. */
export function runScheduledStep(state: State, job: Job<StepPayload>) {
  return transaction(state.db, () => {
    const step = job.payload;
    const applied = applyEvent(state, { accountId: job.accountId, now: job.dueAt }, step.labelId, {
      status: step.status,
      description: step.description,
      location: step.location,
      occurredAt: job.dueAt,
    });
    return applied ? { tracking_number: applied.trackingNumber, status: step.status } : { skipped: true };
  });
}

/**
 * Records one tracking event and everything it implies, in the caller's transaction: the label's
 * status and first scan, the shipment's status, and the events `tracking.updated` (always),
 * `tracking.delivered` and `tracking.exception`. A voided label or a cancelled shipment takes no
 * more events.
 */
export function applyEvent(
  state: State,
  actor: Actor,
  labelId: string,
  event: TrackingEventRecord,
): LabelRecord | undefined {
  const label = state.labels.find(actor.accountId, labelId);
  const shipment = label && state.shipments.find(actor.accountId, label.shipmentId);
  if (!label || !shipment || label.status !== 'active' || shipment.status === 'cancelled') return undefined;

  state.tracking.append(actor.accountId, label.id, event);
  if (event.status !== 'pre_transit') state.labels.markScanned(label.id, event.occurredAt);
  // A delivered shipment stays delivered, whatever is played on its tracking afterwards.
  const shipmentStatus = shipmentStatusFor(event.status);
  if (shipmentStatus && shipmentStatus !== shipment.status && shipment.status !== 'delivered') {
    state.shipments.setStatus(shipment, shipmentStatus);
  }

  let current: LabelRecord = { ...label, trackingStatus: event.status };
  // Delivered, the estimate is the delivery itself, however the parcel got there (a forced advance, a
  // custom event), not a date the scenario had planned for later.
  if (event.status === 'delivered' && label.estimatedDelivery !== event.occurredAt) {
    state.tracking.setEstimate(label.id, event.occurredAt);
    current = { ...current, estimatedDelivery: event.occurredAt };
  }
  const record = presentTracking(state, current);
  state.events.record(actor.accountId, 'tracking.updated', record, actor.now);
  if (event.status === 'delivered') {
    state.events.record(
      actor.accountId,
      'tracking.delivered',
      {
        tracking_number: label.trackingNumber,
        carrier: label.carrier,
        status: 'delivered',
        delivered_at: formatTimestamp(event.occurredAt),
      },
      actor.now,
    );
  }
  if (event.status === 'exception')
    state.events.record(actor.accountId, 'tracking.exception', record, actor.now);
  return current;
}

export function presentTracking(state: State, label: LabelRecord): TrackingRecord {
  const events = state.tracking.events(label.id);
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
export function getTracking(state: State, actor: Actor, trackingNumber: string): TrackingRecord {
  const magic =
    findMagicTrackingNumber(trackingNumber) &&
    magicTimeline(trackingNumber, state.scenarios, state.config.seed);
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
  return presentTracking(state, labelByTrackingNumber(state, actor, trackingNumber));
}

export function labelByTrackingNumber(state: State, actor: Actor, trackingNumber: string): LabelRecord {
  const label = state.labels.findByTrackingNumber(trackingNumber);
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
export function activeLabelOf(state: State, actor: Actor, shipmentId: string): LabelRecord {
  const shipment = state.shipments.find(actor.accountId, shipmentId);
  if (!shipment) throw notFound('shipment', shipmentId);
  const label = shipment.labelId === null ? undefined : state.labels.find(actor.accountId, shipment.labelId);
  if (!label) {
    throw new ApiError(
      422,
      'no_active_label',
      `Shipment ${shipmentId} has no active label; generate one first.`,
    );
  }
  return label;
}

function assertTrackable(state: State, actor: Actor, label: LabelRecord): ShipmentRecord {
  const shipment = state.shipments.find(actor.accountId, label.shipmentId);
  if (!shipment) throw notFound('shipment', label.shipmentId);
  if (label.status !== 'active' || shipment.status === 'cancelled') {
    throw new ApiError(
      422,
      'no_active_label',
      `Label ${label.id} is voided or its shipment cancelled; its tracking no longer changes.`,
    );
  }
  return shipment;
}

/** `POST /_sandbox/…/scenario`: drops the label's pending steps and plays another scenario from now. */
export function switchScenario(state: State, actor: Actor, label: LabelRecord, name: string) {
  const scenario = findScenario(state, name);
  return transaction(state.db, () => {
    const shipment = assertTrackable(state, actor, label);
    const steps = startScenario(state, actor, label, shipment, scenario);
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

/**
 * `POST /_sandbox/…/advance`: plays every step up to the first one with `target`, at once, stamped
 * now and in order. The scenario's own pending steps are used when they lead to `target`, and the
 * rest of the scenario goes on afterwards; otherwise the intermediate statuses are made up and the
 * scenario stops (it no longer describes the parcel). Terminal statuses end the scenario either way.
 */
export function advanceTracking(
  state: State,
  actor: Actor,
  label: LabelRecord,
  target: TrackingStatus,
): TrackingRecord {
  return transaction(state.db, () => {
    const shipment = assertTrackable(state, actor, label);
    const current = presentTracking(state, label).status;
    const pending = state.scheduler.pending<StepPayload>(TRACKING_STEP, label.id);
    const reach = pending.findIndex((job) => job.payload.status === target);

    let steps: { status: TrackingStatus; description: string; location: string }[];
    if (reach >= 0) {
      steps = pending.slice(0, reach + 1).map((job) => job.payload);
      for (const job of pending.slice(0, reach + 1)) state.scheduler.cancelJob(job.id, actor.now);
      if (TERMINAL.has(target)) state.scheduler.cancel(TRACKING_STEP, label.id, actor.now);
    } else {
      const path = pathBetween(current, target);
      if (!path) {
        throw new ApiError(
          422,
          'invalid_transition',
          `The parcel is ${current}; it cannot be advanced to ${target}.`,
          { field: 'status' },
        );
      }
      const forced: Scenario = {
        name: 'forced',
        description: 'forced by the sandbox',
        steps: path.map((status) => ({ afterMs: 0, status })),
      };
      steps = timelineFor(state, label, shipment, forced, actor.now);
      state.scheduler.cancel(TRACKING_STEP, label.id, actor.now);
    }
    let latest = label;
    for (const step of steps) {
      latest = applyEvent(state, actor, label.id, { ...step, occurredAt: actor.now }) ?? latest;
    }
    return presentTracking(state, latest);
  });
}

/** `POST /_sandbox/tracking/:n/events`: a custom event, now, as if the carrier had sent it. */
export function appendCustomEvent(
  state: State,
  actor: Actor,
  label: LabelRecord,
  event: { status: TrackingStatus; description?: string | undefined; location?: string | undefined },
): TrackingRecord {
  return transaction(state.db, () => {
    const shipment = assertTrackable(state, actor, label);
    const latest = state.tracking.events(label.id)[0];
    const applied = applyEvent(state, actor, label.id, {
      status: event.status,
      description: event.description ?? defaultDescription(event.status),
      location: event.location ?? latest?.location ?? `${shipment.from.city}, ${shipment.from.country}`,
      occurredAt: actor.now,
    });
    if (TERMINAL.has(event.status)) state.scheduler.cancel(TRACKING_STEP, label.id, actor.now);
    return presentTracking(state, applied ?? label);
  });
}

function defaultDescription(status: TrackingStatus): string {
  return status
    .split('_')
    .map((word, i) => (i === 0 ? word[0]?.toUpperCase() + word.slice(1) : word))
    .join(' ');
}
