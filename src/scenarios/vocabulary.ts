/**
 * The words a scenario file may use, and that tracking speaks: the specification's tracking statuses
 * and the places along a parcel's journey.
 */

/**
 * The specification's tracking statuses, in the order a package normally meets them. The order is
 * used for documentation and for the magic tracking numbers' codes, so new statuses go at the end.
 */
export const TRACKING_STATUSES = [
  'pre_transit',
  'accepted',
  'in_transit',
  'out_for_delivery',
  'delivered',
  'exception',
  'returned',
] as const;

export type TrackingStatus = (typeof TRACKING_STATUSES)[number];

export function isTrackingStatus(value: unknown): value is TrackingStatus {
  return typeof value === 'string' && (TRACKING_STATUSES as readonly string[]).includes(value);
}

/** Where along the journey a step happens; scenario files name these in `at`. */
export const PLACES = ['origin', 'origin_hub', 'transit_hub', 'destination_hub', 'destination'] as const;
export type Place = (typeof PLACES)[number];
