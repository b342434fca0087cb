import { formatInstant } from './format.js';
import type { Label, TrackingEvent } from './types.js';

/** The specification's void window: 30 days from the label's creation, on the account's clock. */
export const VOID_WINDOW_MS = 30 * 24 * 3600 * 1000;

/**
 * Why a label cannot be voided now, in words, or nothing when it can: the specification's two
 * conditions, as the sandbox judges them (a label counts as scanned once its tracking has left
 * `pre_transit`; the 30 days run on the account's clock). The dashboard offers a void only when this
 * finds nothing, rather than offering one the API would refuse; the API still has the last word.
 *
 * @param events the parcel's tracking events, newest first
 * @param now the account clock's reading
 */
export function voidRefusal(
  label: Pick<Label, 'status' | 'created_at'>,
  events: readonly Pick<TrackingEvent, 'status' | 'occurred_at'>[],
  now: string,
): string | undefined {
  if (label.status === 'voided') return 'The label is voided.';
  // Newest first: the first scan is the last event that is one.
  const firstScan = [...events].reverse().find((event) => event.status !== 'pre_transit');
  if (firstScan) {
    return `The carrier scanned the parcel at ${formatInstant(firstScan.occurred_at)}: a scanned label cannot be voided.`;
  }
  const windowEnd = Date.parse(label.created_at) + VOID_WINDOW_MS;
  if (Date.parse(now) > windowEnd) {
    const end = new Date(windowEnd).toISOString().replace(/\.\d{3}Z$/, 'Z');
    return `The 30 days in which a label can be voided ended at ${formatInstant(end)}.`;
  }
  return undefined;
}
