import { useEffect } from 'preact/hooks';
import { ApiFailure } from '../api.js';
import { LiveState, Screen } from '../components.js';
import { usePoll, useSession } from '../live.js';
import { hrefOf } from '../routes.js';
import type { Label } from '../types.js';

/**
 * A label, which lives on its shipment's screen: reads the label once to learn its shipment, then
 * shows that shipment in its place (the history keeps the link that led here, not this stop). The
 * read is `GET /v1/labels/:id`, as the shipment screen's own; no `/_sandbox` route finds a shipment
 * by its label, a voided one included.
 */
export function LabelScreen(props: { id: string }) {
  const { api } = useSession();
  const live = usePoll(
    () =>
      api.get<Label>(`/v1/labels/${encodeURIComponent(props.id)}`).catch((failure: unknown) => {
        if (failure instanceof ApiFailure && failure.status === 404) return null;
        throw failure;
      }),
    [api, props.id],
    { everyMs: Infinity },
  );
  const shipment = live.data?.shipment_id;
  useEffect(() => {
    if (shipment) window.location.replace(hrefOf({ screen: 'shipment', id: shipment }));
  }, [shipment]);

  if (live.data === null) {
    return (
      <Screen title="No such label">
        <p>
          This account has no label <span class="mono">{props.id}</span>.{' '}
          <a href={hrefOf({ screen: 'shipments' })}>All shipments</a>
        </p>
      </Screen>
    );
  }
  return (
    <Screen title={`Label ${props.id}`}>
      <LiveState live={live} what="the label and its shipment" />
    </Screen>
  );
}
