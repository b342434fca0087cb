import { formatTimestamp } from '../core/time.js';
import type { LabelRecord } from '../labels/store.js';
import type { TrackingStatus } from '../scenarios/vocabulary.js';
import type { TrackingEventRecord } from './store.js';

/** The specification's Tracking record. */
export interface TrackingRecord {
  tracking_number: string;
  carrier: string;
  status: TrackingStatus;
  estimated_delivery: string;
  events: { status: TrackingStatus; description: string; location: string; occurred_at: string }[];
}

/** A label's tracking as the API shows it, from its events (newest first). */
export function presentTracking(label: LabelRecord, events: readonly TrackingEventRecord[]): TrackingRecord {
  return {
    tracking_number: label.trackingNumber,
    carrier: label.carrier,
    status: events[0]?.status ?? 'pre_transit',
    estimated_delivery: formatTimestamp(label.estimatedDelivery ?? label.createdAt),
    events: events.map(presentEvent),
  };
}

/** A magic tracking number's record: its whole timeline, as if it had already happened. */
export function presentMagicTracking(
  trackingNumber: string,
  magic: { carrier: string; estimatedDelivery: number; steps: readonly TrackingEventRecord[] },
): TrackingRecord {
  const events = [...magic.steps].reverse();
  return {
    tracking_number: trackingNumber,
    carrier: magic.carrier,
    status: events[0]?.status ?? 'pre_transit',
    estimated_delivery: formatTimestamp(magic.estimatedDelivery),
    events: events.map(presentEvent),
  };
}

export function presentEvent(event: TrackingEventRecord): TrackingRecord['events'][number] {
  return {
    status: event.status,
    description: event.description,
    location: event.location,
    occurred_at: formatTimestamp(event.occurredAt),
  };
}
