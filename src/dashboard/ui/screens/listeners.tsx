import { Instant, LiveState, Status, Table } from '../components.js';
import { usePoll, useSession } from '../live.js';
import type { List, Listener, ListenerDelivery } from '../types.js';

/**
 * The account's open listen sessions (`shipping-sandbox listen`), each with its deliveries: where the
 * command forwards them, and what the receiver answered. They are not webhooks, so they are listed
 * apart from the endpoints.
 */
export function ListenSessions() {
  const { api } = useSession();
  const sessions = usePoll(() => api.get<List<Listener>>('/_sandbox/listeners'), [api]);
  const list = sessions.data?.data ?? [];
  return (
    <section class="panel" aria-labelledby="listeners-title">
      <h2 id="listeners-title">Listen sessions</h2>
      <p class="intro">
        Each <code>shipping-sandbox listen</code> running for this account: the command receives the events
        through its own connection and forwards them from its machine, signed with the listen secret.
      </p>
      <LiveState live={sessions} what="the listen sessions" />
      {sessions.loaded && list.length === 0 && (
        <p class="muted">
          No session open. Run <code>shipping-sandbox listen --forward-to localhost:3000/webhooks</code>.
        </p>
      )}
      {list.map((session) => (
        <SessionDeliveries key={session.id} session={session} />
      ))}
    </section>
  );
}

function SessionDeliveries(props: { session: Listener }) {
  const { api } = useSession();
  const { session } = props;
  const live = usePoll(
    () => api.get<List<ListenerDelivery>>(`/_sandbox/listeners/${session.id}/deliveries?limit=20`),
    [api, session.id],
  );
  const where = session.forward_to ?? 'printed by the command';
  return (
    <section aria-labelledby={`listener-${session.id}`}>
      <h3 id={`listener-${session.id}`}>
        {where} <span class="muted mono">{session.id}</span>
      </h3>
      <p class="muted">
        {session.connected ? 'Connected' : 'Reconnecting (it ends 10 s after its connection closed)'} · since{' '}
        <Instant value={session.connected_at} /> · {session.events.join(', ')}
      </p>
      <LiveState live={live} what="its deliveries" />
      <Table
        caption={`Deliveries through ${session.id}, newest first`}
        head={['Event', 'Try', 'Status', 'Answer', 'Sent']}
        empty="No deliveries yet."
      >
        {(live.data?.data ?? []).map((attempt) => (
          <tr key={attempt.id}>
            <td>
              {attempt.event}
              <div class="muted mono">{attempt.event_id}</div>
            </td>
            <td>{attempt.attempt === 0 ? 'first' : `retry ${attempt.attempt}`}</td>
            <td>
              <Status value={attempt.status} />
            </td>
            <td>
              {attempt.response_status ?? <span class="muted">—</span>}
              {attempt.error && <div class="muted">{attempt.error_message ?? attempt.error}</div>}
            </td>
            <td>
              <Instant value={attempt.sent_at ?? attempt.scheduled_at} />
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}
