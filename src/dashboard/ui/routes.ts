/**
 * The dashboard's screens, addressed by the URL fragment (`#/shipments/shp_…`), so every screen is a
 * real link that can be opened in a new tab, bookmarked or gone back to, and the server serves one
 * page for all of them.
 */

export type Route =
  | { screen: 'shipments' }
  | { screen: 'shipment'; id: string }
  | { screen: 'clock' }
  | { screen: 'webhooks'; id?: string }
  | { screen: 'outbox' }
  | { screen: 'keys' }
  | { screen: 'faults' }
  | { screen: 'requests' }
  | { screen: 'report' };

export type Screen = Route['screen'];

/** The screens in the navigation, in its order, with their names. */
export const NAVIGATION: readonly { screen: Screen; label: string; href: string }[] = [
  { screen: 'shipments', label: 'Shipments', href: '#/shipments' },
  { screen: 'clock', label: 'Clock', href: '#/clock' },
  { screen: 'webhooks', label: 'Webhooks', href: '#/webhooks' },
  { screen: 'outbox', label: 'E-mail outbox', href: '#/outbox' },
  { screen: 'keys', label: 'Keys', href: '#/keys' },
  { screen: 'faults', label: 'Faults', href: '#/faults' },
  { screen: 'requests', label: 'Request journal', href: '#/requests' },
  { screen: 'report', label: 'Integration report', href: '#/report' },
];

/** Identifiers as the API makes them: a prefix, an underscore, letters and digits. */
const ID = /^[a-z]+_[A-Za-z0-9]+$/;

export function parseRoute(hash: string): Route {
  const [first, second, ...more] = hash.replace(/^#\/?/, '').split('/').map(decodeSegment);
  const id = second !== undefined && more.length === 0 && ID.test(second) ? second : undefined;
  switch (first) {
    case 'shipments':
      return id ? { screen: 'shipment', id } : { screen: 'shipments' };
    case 'webhooks':
      return id ? { screen: 'webhooks', id } : { screen: 'webhooks' };
    case 'clock':
    case 'outbox':
    case 'keys':
    case 'faults':
    case 'requests':
    case 'report':
      return { screen: first };
    default:
      return { screen: 'shipments' };
  }
}

export function hrefOf(route: Route): string {
  switch (route.screen) {
    case 'shipment':
      return `#/shipments/${encodeURIComponent(route.id)}`;
    case 'webhooks':
      return route.id ? `#/webhooks/${encodeURIComponent(route.id)}` : '#/webhooks';
    default:
      return `#/${route.screen}`;
  }
}

/** The navigation entry a screen belongs to (a shipment belongs to the shipments). */
export function sectionOf(route: Route): Screen {
  return route.screen === 'shipment' ? 'shipments' : route.screen;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return '';
  }
}
