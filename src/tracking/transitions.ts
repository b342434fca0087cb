import type { LabelRecord } from '../labels/store.js';
import type { TrackingStatus } from '../scenarios/vocabulary.js';
import type { ShipmentRecord } from '../shipments/store.js';

/** A voided label or a cancelled shipment takes no more tracking events. */
export function isTrackable(label: LabelRecord, shipment: ShipmentRecord): boolean {
  return label.status === 'active' && shipment.status !== 'cancelled';
}

/** The usual journey; `exception` and `returned` branch off it. */
const MAIN_LINE: readonly TrackingStatus[] = [
  'pre_transit',
  'accepted',
  'in_transit',
  'out_for_delivery',
  'delivered',
];

/** Statuses that end a parcel's journey, and its scenario with it. */
export const TERMINAL: ReadonlySet<TrackingStatus> = new Set(['delivered', 'returned']);

/**
 * The statuses between `current` and `target` that a forced advance plays, when the scenario does not
 * lead there itself. An exception sits beside the main line (the parcel resumes from `in_transit`);
 * a return always passes through an exception first.
 */
export function pathBetween(current: TrackingStatus, target: TrackingStatus): TrackingStatus[] | undefined {
  if (TERMINAL.has(current)) return undefined;
  if (target === 'exception') return current === 'exception' ? undefined : ['exception'];
  if (target === 'returned') return current === 'exception' ? ['returned'] : ['exception', 'returned'];
  const from = current === 'exception' ? MAIN_LINE.indexOf('in_transit') : MAIN_LINE.indexOf(current);
  const to = MAIN_LINE.indexOf(target);
  return to > from ? MAIN_LINE.slice(from + 1, to + 1) : undefined;
}

/** A custom event's description when none is given: its status in words (`Out for delivery`). */
export function defaultDescription(status: TrackingStatus): string {
  return status
    .split('_')
    .map((word, i) => (i === 0 ? word[0]?.toUpperCase() + word.slice(1) : word))
    .join(' ');
}
