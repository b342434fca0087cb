import type { Actor } from '../core/actor.js';
import { ApiError, notFound } from '../core/errors.js';
import { formatTimestamp } from '../core/time.js';
import type { Sql } from '../db/sql.js';
import type { LabelRecord, LabelStore } from '../labels/store.js';
import type { ScenarioCatalog } from '../scenarios/catalog.js';
import type { Scenario } from '../scenarios/files.js';
import { TRACKING_STATUSES, type TrackingStatus } from '../scenarios/vocabulary.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { ShipmentRecord, ShipmentStore } from '../shipments/store.js';
import { type ChainPayload, isChain, TRACKING_STEP } from './chain.js';
import type { TrackingPlanner } from './planner.js';
import { presentEvent, presentTracking, type TrackingRecord } from './presentation.js';
import { eventOf, type TrackingSteps } from './steps.js';
import type { TrackingStore } from './store.js';
import { defaultDescription, isTrackable, pathBetween, TERMINAL } from './transitions.js';

export interface TrackingControlsDeps {
  db: Sql;
  store: TrackingStore;
  labels: LabelStore;
  shipments: ShipmentStore;
  scheduler: Scheduler;
  scenarios: ScenarioCatalog;
  planner: TrackingPlanner;
  steps: TrackingSteps;
}

/**
 * QA's levers on a parcel (`/_sandbox/…/tracking`): another scenario, an advance to a status, a
 * custom event, and the overview that says what is to come and which statuses an advance accepts.
 */
export class TrackingControls {
  constructor(private readonly deps: TrackingControlsDeps) {}

  /** The label with this tracking number, in the caller's account. */
  async labelByTrackingNumber(actor: Actor, trackingNumber: string): Promise<LabelRecord> {
    const label = await this.deps.labels.findByTrackingNumber(this.deps.db, trackingNumber);
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
  async activeLabelOf(actor: Actor, shipmentId: string): Promise<LabelRecord> {
    const { db } = this.deps;
    const shipment = await this.deps.shipments.find(db, actor.accountId, shipmentId);
    if (!shipment) throw notFound('shipment', shipmentId);
    const label =
      shipment.labelId === null
        ? undefined
        : await this.deps.labels.find(db, actor.accountId, shipment.labelId);
    if (!label) {
      throw new ApiError(
        422,
        'no_active_label',
        `Shipment ${shipmentId} has no active label; generate one first.`,
      );
    }
    return label;
  }

  /** `POST /_sandbox/…/scenario`: drops the label's pending steps and plays another scenario from now. */
  switchScenario(actor: Actor, label: LabelRecord, name: string) {
    const scenario = this.deps.scenarios.find(name);
    return this.deps.db.transaction(async (tx) => {
      const shipment = await this.assertTrackable(tx, actor, label);
      // A delivered or returned parcel's story is over: `advance` refuses to move it, and so does this.
      const { status } = await this.present(tx, label);
      if (TERMINAL.has(status))
        throw new ApiError(
          422,
          'invalid_transition',
          `The parcel is ${status}; no scenario plays after that.`,
          {
            field: 'name',
          },
        );
      const steps = await this.deps.steps.startScenario(tx, actor, label, shipment, scenario);
      return {
        shipment_id: shipment.id,
        tracking_number: label.trackingNumber,
        scenario: scenario.name,
        steps: steps.map(presentEvent),
      };
    });
  }

  /**
   * `POST /_sandbox/…/advance`: plays every step up to the first one with `target`, at once, stamped
   * now and in order. The scenario's own pending steps are used when they lead to `target`, and the
   * rest of the scenario goes on afterwards; otherwise the intermediate statuses are made up and the
   * scenario stops (it no longer describes the parcel). Terminal statuses end the scenario either way.
   */
  advance(actor: Actor, label: LabelRecord, target: TrackingStatus): Promise<TrackingRecord> {
    const { db, scheduler, planner } = this.deps;
    return db.transaction(async (tx) => {
      const shipment = await this.assertTrackable(tx, actor, label);
      const before = await this.present(tx, label);
      const current = before.status;
      const pending = await planner.pendingSteps(tx, label, shipment);
      const reach = pending.findIndex((step) => step.status === target);

      let steps: { status: TrackingStatus; description: string; location: string }[];
      if (reach >= 0) {
        steps = pending.slice(0, reach + 1).map(eventOf);
        const played = new Set(pending.slice(0, reach + 1).map((step) => step.job));
        for (const job of played) await scheduler.cancelJob(tx, job.id, actor.now);
        if (TERMINAL.has(target)) {
          await scheduler.cancel(tx, TRACKING_STEP, label.id, actor.now);
        } else {
          // The rest of a chain whose pending job was played goes on from its next step.
          const rest = pending[reach + 1];
          if (rest && played.has(rest.job) && isChain(rest.job.payload)) {
            await scheduler.continueChain<ChainPayload>(tx, rest.job, rest.ahead, {
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
        steps = planner.timelineFor(label, shipment, forced, actor.now, undefined, before.events[0]);
        await scheduler.cancel(tx, TRACKING_STEP, label.id, actor.now);
      }
      let latest = label;
      for (const step of steps) {
        latest =
          (await this.deps.steps.applyEvent(tx, actor, label.id, { ...step, occurredAt: actor.now })) ??
          latest;
      }
      return this.present(tx, latest);
    });
  }

  /**
   * `GET /_sandbox/shipments/:id/tracking`: the parcel as QA sees it: its record, the scenario it plays
   * and the steps still to come, and the statuses `advance` would accept now.
   */
  async overview(actor: Actor, shipmentId: string) {
    const { db } = this.deps;
    const label = await this.activeLabelOf(actor, shipmentId);
    const shipment = await this.deps.shipments.find(db, actor.accountId, label.shipmentId);
    const record = await this.present(db, label);
    const trackable = shipment !== undefined && isTrackable(label, shipment);
    const pending = trackable ? await this.deps.planner.pendingSteps(db, label, shipment) : [];
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
  ): Promise<TrackingRecord> {
    return this.deps.db.transaction(async (tx) => {
      const shipment = await this.assertTrackable(tx, actor, label);
      const latest = (await this.deps.store.events(tx, label.id))[0];
      const applied = await this.deps.steps.applyEvent(tx, actor, label.id, {
        status: event.status,
        description: event.description ?? defaultDescription(event.status),
        location: event.location ?? latest?.location ?? `${shipment.from.city}, ${shipment.from.country}`,
        occurredAt: actor.now,
      });
      if (TERMINAL.has(event.status))
        await this.deps.scheduler.cancel(tx, TRACKING_STEP, label.id, actor.now);
      return this.present(tx, applied ?? label);
    });
  }

  private async present(q: Sql, label: LabelRecord): Promise<TrackingRecord> {
    return presentTracking(label, await this.deps.store.events(q, label.id));
  }

  private async assertTrackable(tx: Sql, actor: Actor, label: LabelRecord): Promise<ShipmentRecord> {
    const shipment = await this.deps.shipments.findForUpdate(tx, actor.accountId, label.shipmentId);
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
}
