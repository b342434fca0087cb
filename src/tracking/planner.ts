import { LRUCache } from 'lru-cache';
import { snakeCaseKeys } from '../core/json.js';
import type { Sql } from '../db/sql.js';
import type { LabelRecord, LabelStore } from '../labels/store.js';
import type { ScenarioCatalog } from '../scenarios/catalog.js';
import type { Scenario } from '../scenarios/files.js';
import type { TrackingStatus } from '../scenarios/vocabulary.js';
import type { ChainedItem, Job } from '../scheduler/queue.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { ShipmentRecord, ShipmentStore } from '../shipments/store.js';
import { type ChainPayload, isChain, TRACKING_STEP, type TrackingJobPayload } from './chain.js';
import type { TrackingPlan, TrackingStore } from './store.js';
import { planTimeline, type TimelineInput, type TimelineStep } from './timeline.js';

/** A step still to come, and the pending job it belongs to (`ahead` places along its chain). */
export interface PendingStep {
  job: Job<TrackingJobPayload>;
  ahead: number;
  scenario: string;
  index: number;
  status: TrackingStatus;
  description: string;
  location: string;
  dueAt: number;
}

export interface TrackingPlannerDeps {
  db: Sql;
  store: TrackingStore;
  labels: LabelStore;
  shipments: ShipmentStore;
  scheduler: Scheduler;
  scenarios: ScenarioCatalog;
  /** `--seed`: the same seed gives the same journeys. */
  seed: string;
}

/**
 * The timelines labels play: each scenario's plan with this server's seed, the whole timeline a
 * chain's steps come from (as it was planned when its scenario started), and the steps a label's
 * pending jobs stand for.
 */
export class TrackingPlanner {
  /** Each scenario's plan with this server's seed, stored at start (`start`), never in a transaction that may roll back. */
  private readonly planIds = new Map<Scenario, number>();
  /** Plans by id, read once each (those of earlier runs included). */
  private readonly plans = new Map<number, TrackingPlan>();
  /**
   * The timelines of the chains run most recently, so that an advance over the steps of a few
   * thousand labels plans each once rather than once a step (about 1 KiB each).
   */
  private readonly timelines = new LRUCache<string, TimelineStep[]>({ max: 2048 });

  constructor(private readonly deps: TrackingPlannerDeps) {}

  /** Stores each scenario's plan with this server's seed (those stored before are found). */
  async start(): Promise<void> {
    for (const scenario of this.deps.scenarios.all()) {
      const plan = { seed: this.deps.seed, scenario };
      const id = await this.deps.store.planIdOf(this.deps.db, plan);
      this.planIds.set(scenario, id);
      this.plans.set(id, plan);
    }
  }

  /** The id of the scenario's plan with this server's seed. */
  planIdOf(scenario: Scenario): number {
    const plan = this.planIds.get(scenario);
    if (plan === undefined) throw new Error(`scenario '${scenario.name}' has no plan`);
    return plan;
  }

  /**
   * The label's timeline for `scenario` started at `startedAt`; with `after` (the parcel's latest
   * event), one that goes on from where the parcel is (see TimelineInput).
   */
  timelineFor(
    label: LabelRecord,
    shipment: ShipmentRecord,
    scenario: Scenario,
    startedAt: number,
    seed = this.deps.seed,
    after?: TimelineInput['after'],
  ): TimelineStep[] {
    const { id: labelId, carrier } = label;
    return planTimeline(
      { seed, labelId, carrier, from: shipment.from, to: shipment.to, startedAt, after },
      scenario,
    );
  }

  /** A chain just started from `timeline`: its steps will be asked for soon. */
  remember(labelId: string, chain: ChainPayload, timeline: TimelineStep[]): void {
    this.timelines.set(timelineKey(labelId, chain), timeline);
  }

  /** The whole timeline a chain's steps come from, as it was planned when its scenario started. */
  async chainTimeline(
    q: Sql,
    payload: ChainPayload,
    label: LabelRecord,
    shipment: ShipmentRecord,
  ): Promise<{ scenario: Scenario; timeline: TimelineStep[] } | undefined> {
    let plan = this.plans.get(payload.plan);
    if (!plan) {
      plan = await this.deps.store.plan(q, payload.plan);
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

  /** The label's steps still to come, soonest first (at equal times, in the order they will run). */
  async pendingSteps(
    q: Sql,
    label: LabelRecord,
    shipment: ShipmentRecord | undefined,
  ): Promise<PendingStep[]> {
    const jobs = await this.deps.scheduler.pending<TrackingJobPayload>(q, TRACKING_STEP, label.id);
    const steps = await Promise.all(jobs.map((job) => this.stepsOf(q, job, label, shipment)));
    return steps.flat().sort((a, b) => a.dueAt - b.dueAt || a.job.seq + a.ahead - (b.job.seq + b.ahead));
  }

  /** `GET /_sandbox/clock/due`: every step a pending job stands for, in the words of a step's payload. */
  async upcomingOf(job: Job<TrackingJobPayload>): Promise<ChainedItem[]> {
    if (!isChain(job.payload)) return [{ ahead: 0, dueAt: job.dueAt, detail: snakeCaseKeys(job.payload) }];
    const { db } = this.deps;
    const label = await this.deps.labels.find(db, job.accountId, job.subject);
    const shipment = label && (await this.deps.shipments.find(db, job.accountId, label.shipmentId));
    const steps = await this.stepsOf(db, job, label, shipment);
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

  /** The steps a pending job stands for: its own, and for a chain every later one. */
  private async stepsOf(
    q: Sql,
    job: Job<TrackingJobPayload>,
    label: LabelRecord | undefined,
    shipment: ShipmentRecord | undefined,
  ): Promise<PendingStep[]> {
    const { payload } = job;
    if (!isChain(payload)) return [{ job, ahead: 0, ...payload, dueAt: job.dueAt }];
    const planned = label && shipment && (await this.chainTimeline(q, payload, label, shipment));
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
}

function timelineKey(labelId: string, chain: ChainPayload): string {
  return `${labelId} ${chain.plan} ${chain.startedAt}`;
}
