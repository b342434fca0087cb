import type { TrackingStatus } from '../scenarios/vocabulary.js';

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

export const isChain = (payload: TrackingJobPayload): payload is ChainPayload => 'plan' in payload;
