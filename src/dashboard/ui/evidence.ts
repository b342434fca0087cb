import { hrefOf } from './routes.js';
import type { Evidence } from './types.js';

/** Where a piece of evidence lives in the dashboard, and a link text that says so. */
export function evidenceLink(item: Evidence): { href: string; text: string } {
  switch (item.kind) {
    case 'request':
      return {
        href: hrefOf({ screen: 'requests', id: item.id }),
        text: `View request ${item.id} in the journal`,
      };
    case 'delivery':
      return {
        href: item.webhook_id
          ? hrefOf({ screen: 'webhooks', id: item.webhook_id, delivery: item.id })
          : hrefOf({ screen: 'webhooks' }),
        text: `View delivery ${item.id}`,
      };
    case 'label_url':
      // The evidence names the label's shipment: no read of the label (a /v1 request) to find it.
      return {
        href: item.shipment_id
          ? hrefOf({ screen: 'shipment', id: item.shipment_id })
          : hrefOf({ screen: 'shipments' }),
        text: `View the shipment of label ${item.id}`,
      };
  }
}
