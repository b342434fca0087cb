import type { Place, TrackingStatus } from '../scenarios/vocabulary.js';
import type { Rng } from './journey.js';

/**
 * Carrier-style event descriptions, worded as each carrier's own tracking pages word them, so that a
 * merchant's UI shows something that looks real. `{city}` stands for the city of the event's location
 * (DHL names the facility in the text itself).
 */

/**
 * What happens at a step. `in_transit` is split by what the package does at its place: it has just
 * `arrived` there, it `departed` from the place of the previous scan, or it is `processing` (a further
 * scan at the same place, or a move with no place change worth naming). `exception` is split by when
 * it happens, since a carrier words each differently: before it has the package (a `pickup_exception`:
 * the driver came and left without it), on the way (a `transit_exception`: a delay or a hold at a
 * facility), or at the door (a `delivery_exception`: an attempt that failed).
 */
export type Moment = Exclude<TrackingStatus, 'in_transit' | 'exception'> | Movement | ExceptionMoment;
type Movement = 'arrived' | 'departed' | 'processing';
export type ExceptionMoment = 'pickup_exception' | 'transit_exception' | 'delivery_exception';

/** Variants per moment, and for a movement optionally per place, which wins over the plain one. */
type Table = Record<Moment, readonly string[]> & Partial<Record<`${Movement}@${Place}`, readonly string[]>>;

const USPS: Table = {
  pre_transit: [
    'Shipping Label Created, USPS Awaiting Item',
    'Pre-Shipment Info Sent to USPS, USPS Awaiting Item',
  ],
  accepted: ['Accepted at USPS Origin Facility', 'USPS in possession of item', 'USPS picked up item'],
  arrived: ['Arrived at USPS Regional Facility'],
  'arrived@origin_hub': ['Arrived at USPS Regional Origin Facility'],
  'arrived@transit_hub': ['Arrived at USPS Regional Facility', 'Processed Through Facility'],
  'arrived@destination_hub': ['Arrived at USPS Regional Destination Facility'],
  departed: ['Departed USPS Regional Facility'],
  processing: ['In Transit to Next Facility'],
  out_for_delivery: ['Out for Delivery'],
  delivered: [
    'Delivered, In/At Mailbox',
    'Delivered, Front Door/Porch',
    'Delivered, Left with Individual',
    'Delivered, Parcel Locker',
  ],
  pickup_exception: [
    'Pickup Attempted, Item Not Ready for Pickup',
    'Scheduled Pickup Not Completed, Business Closed',
  ],
  transit_exception: ['In Transit, Arriving Late', 'Held at USPS Facility, Delayed in Processing'],
  delivery_exception: [
    'Delivery Attempted - No Access to Delivery Location',
    'Notice Left (No Authorized Recipient Available)',
  ],
  returned: ['Return to Sender Processed', 'Returned to Sender'],
};

const UPS: Table = {
  pre_transit: ['Shipper created a label, UPS has not received the package yet.', 'Label Created'],
  accepted: ['Pickup Scan', 'Origin Scan', 'Drop-Off'],
  arrived: ['Arrived at Facility'],
  departed: ['Departed from Facility'],
  processing: ['Processing at UPS Facility'],
  out_for_delivery: ['Out For Delivery Today', 'Loaded on Delivery Vehicle'],
  delivered: ['Delivered', 'Delivered - Front Door', 'Delivered - Receiver'],
  pickup_exception: [
    'The package was not ready for pickup. We will make another attempt the next business day.',
    "The shipper's business was closed at the time of pickup.",
  ],
  transit_exception: [
    'Your package is delayed in transit. We are updating the delivery date.',
    'A mechanical failure has caused a delay. We will update the delivery date as soon as possible.',
  ],
  delivery_exception: [
    'The receiver was not available for delivery. We will make a second attempt the next business day.',
    'A delivery change for this package is in progress.',
  ],
  returned: ['Returned to Sender', 'The package is being returned to the sender.'],
};

const FEDEX: Table = {
  pre_transit: ['Shipment information sent to FedEx', 'Label created'],
  accepted: ['Picked up', 'Dropped off at FedEx location'],
  arrived: ['Arrived at FedEx hub'],
  'arrived@origin_hub': ['At FedEx origin facility'],
  'arrived@destination_hub': ['At local FedEx facility', 'At destination sort facility'],
  departed: ['Departed FedEx hub'],
  'departed@origin_hub': ['Left FedEx origin facility'],
  'departed@destination_hub': ['Departed FedEx location'],
  processing: ['In transit'],
  out_for_delivery: ['On FedEx vehicle for delivery'],
  delivered: ['Delivered', 'Delivered - Left at front door'],
  pickup_exception: [
    'Pickup exception - Package not ready for pickup',
    'Pickup exception - Business closed at time of pickup',
  ],
  transit_exception: [
    'Shipment exception - Delay beyond our control',
    'Shipment exception - Package delayed',
  ],
  delivery_exception: [
    'Delivery exception - Customer not available or business closed',
    'Delivery exception - Unable to deliver',
  ],
  returned: ['Returning package to shipper', 'Returned to shipper'],
};

const DHL_EXPRESS: Table = {
  pre_transit: ['Shipment information received'],
  accepted: ['Shipment picked up'],
  arrived: ['Arrived at DHL Sort Facility {city}', 'Arrived at Sort Facility {city}'],
  'arrived@destination_hub': ['Arrived at Delivery Facility in {city}'],
  departed: ['Departed Facility in {city}'],
  processing: ['Processed at {city}', 'Transferred through {city}'],
  out_for_delivery: ['With delivery courier', 'Out with courier for delivery'],
  delivered: ['Delivered', 'Delivered - Signed for by receiver'],
  pickup_exception: ['Shipment not ready for pickup', 'Pickup attempted; shipper premises closed'],
  transit_exception: ['Shipment on hold in {city}', 'Delay in transit at {city}'],
  delivery_exception: [
    'Delivery attempted; recipient not home',
    'Delivery attempted; consignee premises closed',
  ],
  returned: ['Returned to shipper', 'Shipment is being returned to shipper'],
};

/** For a carrier slug without a table of its own (a carrier added to the fixture later). */
const GENERIC: Table = {
  pre_transit: ['Label created, awaiting item'],
  accepted: ['Package accepted by the carrier'],
  arrived: ['Arrived at carrier facility'],
  departed: ['Departed carrier facility'],
  processing: ['In transit to next facility'],
  out_for_delivery: ['Out for delivery'],
  delivered: ['Delivered'],
  pickup_exception: ['Pickup attempted - package not ready'],
  transit_exception: ['Delayed in transit'],
  delivery_exception: ['Delivery attempted - recipient not available'],
  returned: ['Returned to sender'],
};

const TABLES: Readonly<Record<string, Table>> = {
  usps: USPS,
  ups: UPS,
  fedex: FEDEX,
  dhl_express: DHL_EXPRESS,
};

/** The carrier's wording of `moment` at `place`, one of its variants, with `{city}` filled in. */
export function describeStep(
  step: { carrier: string; moment: Moment; place: Place; city: string },
  rng: Rng,
): string {
  const table = TABLES[step.carrier] ?? GENERIC;
  const atPlace = isMovement(step.moment) ? table[`${step.moment}@${step.place}`] : undefined;
  const variants = atPlace ?? table[step.moment];
  const text = variants[Math.floor(rng() * variants.length)] ?? variants[0] ?? '';
  return fillPlaceholders(text, step.city);
}

/** Scenario files may use `{city}` too, so their own descriptions can name the facility like DHL does. */
export function fillPlaceholders(text: string, city: string): string {
  return text.replaceAll('{city}', city);
}

function isMovement(moment: Moment): moment is Movement {
  return moment === 'arrived' || moment === 'departed' || moment === 'processing';
}
