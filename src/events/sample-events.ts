import { newId } from '../core/ids.js';
import { formatTimestamp } from '../core/time.js';
import type { EventType } from './schema.js';

/**
 * Sample `data` for each event type, shaped exactly as the real events' data, for
 * `POST /_sandbox/events/trigger`: a merchant tests a handler without creating anything. Identifiers
 * are fresh each time, so a handler that drops duplicates by id still sees every trigger.
 */
export function sampleEventData(type: EventType, now: number): unknown {
  const at = formatTimestamp(now);
  const shipmentId = newId('shp', now);
  const labelId = newId('lbl', now);
  const trackingNumber = '9400100000000000000150';
  const address = (name: string, address1: string, city: string, state: string, zip: string) => ({
    name,
    address1,
    city,
    state,
    zip,
    country: 'US',
  });
  const shipment = {
    id: shipmentId,
    status: 'created',
    carrier: 'usps',
    service: 'priority',
    rate: { amount: '12.60', currency: 'USD' },
    from: address('Ada Lovelace', '417 Montgomery St', 'San Francisco', 'CA', '94104'),
    to: address('Grace Hopper', '350 5th Ave', 'New York', 'NY', '10118'),
    parcel: { weight: 1200, length: 30, width: 20, height: 10 },
    reference: 'sample-order',
    tracking_number: null,
    label_id: null,
    created_at: at,
    cancelled_at: null,
  };
  const tracking = (status: 'in_transit' | 'exception') => ({
    tracking_number: trackingNumber,
    carrier: 'usps',
    status,
    estimated_delivery: formatTimestamp(now + 2 * 86_400_000),
    events: [
      status === 'exception'
        ? {
            status,
            description: 'Delivery Attempted - No Access to Delivery Location',
            location: 'New York, NY, US',
            occurred_at: at,
          }
        : {
            status,
            description: 'Arrived at USPS Regional Facility',
            location: 'Jersey City, NJ, US',
            occurred_at: at,
          },
      {
        status: 'pre_transit',
        description: 'Shipping Label Created, USPS Awaiting Item',
        location: 'San Francisco, CA, US',
        occurred_at: formatTimestamp(now - 86_400_000),
      },
    ],
  });
  switch (type) {
    case 'shipment.created':
      return shipment;
    case 'shipment.cancelled':
      return { id: shipmentId, status: 'cancelled', cancelled_at: at };
    case 'label.generated':
      return {
        id: labelId,
        shipment_id: shipmentId,
        tracking_number: trackingNumber,
        carrier: 'usps',
        format: 'pdf',
        label_url: `https://cdn.sandbox.invalid/labels/${labelId}.pdf?expires=0&signature=sample`,
        expires_at: formatTimestamp(now + 7 * 86_400_000),
        created_at: at,
        status: 'active',
      };
    case 'label.voided':
      return {
        id: labelId,
        status: 'voided',
        refund: { amount: '12.60', currency: 'USD', estimated_at: formatTimestamp(now + 14 * 86_400_000) },
        shipment_id: shipmentId,
      };
    case 'tracking.updated':
      return tracking('in_transit');
    case 'tracking.exception':
      return tracking('exception');
    case 'tracking.delivered':
      return { tracking_number: trackingNumber, carrier: 'usps', status: 'delivered', delivered_at: at };
  }
}
