/**
 * The dashboard's screens, addressed by the URL fragment (`#/shipments/shp_…`), so every screen is a
 * real link that can be opened in a new tab, bookmarked or gone back to, and the server serves one
 * page for all of them. A fragment can also point at one thing on a screen (a journal entry, a
 * delivery attempt), which the screen marks and scrolls to: what the integration report links to.
 */

export type Route =
  | { screen: 'shipments' }
  | { screen: 'shipment'; id: string }
  | { screen: 'clock' }
  | { screen: 'webhooks'; id?: string; delivery?: string }
  | { screen: 'outbox' }
  | { screen: 'keys' }
  | { screen: 'faults' }
  | { screen: 'requests'; id?: string }
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
  const [first, ...rest] = hash.replace(/^#\/?/, '').split('/').map(decodeSegment);
  // Anything after the screen's name is identifiers, or the fragment names no one thing.
  const ids = rest.every((segment) => ID.test(segment)) ? rest : [];
  const [id, inner] = ids;
  switch (first) {
    case 'shipments':
      return id && ids.length === 1 ? { screen: 'shipment', id } : { screen: 'shipments' };
    case 'webhooks':
      if (id && inner && ids.length === 2) return { screen: 'webhooks', id, delivery: inner };
      return id && ids.length === 1 ? { screen: 'webhooks', id } : { screen: 'webhooks' };
    case 'requests':
      return id && ids.length === 1 ? { screen: 'requests', id } : { screen: 'requests' };
    case 'clock':
    case 'outbox':
    case 'keys':
    case 'faults':
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
      if (!route.id) return '#/webhooks';
      return route.delivery
        ? `#/webhooks/${encodeURIComponent(route.id)}/${encodeURIComponent(route.delivery)}`
        : `#/webhooks/${encodeURIComponent(route.id)}`;
    case 'requests':
      return route.id ? `#/requests/${encodeURIComponent(route.id)}` : '#/requests';
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
