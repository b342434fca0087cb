import { Instant, LiveState, Screen, Table } from '../components.js';
import { formatInstant } from '../format.js';
import { usePoll, useSession } from '../live.js';
import { hrefOf } from '../routes.js';
import { useScrolledTo } from '../scroll.js';
import type { JournalEntry, List } from '../types.js';

/** What the screen shows; the whole journal when it looks for one entry, which may be far down. */
const SHOWN = 200;
const KEPT = 1000;

/**
 * The account's latest API requests as the sandbox saw them (WireMock's request journal). With an
 * entry's id (`#/requests/req_…`, the integration report's evidence links here) that entry is marked,
 * opened and scrolled to.
 */
export function RequestsScreen(props: { selected?: string | undefined }) {
  const { api } = useSession();
  const { selected } = props;
  const live = usePoll(
    () => api.get<List<JournalEntry>>(`/_sandbox/requests?limit=${selected ? KEPT : SHOWN}`),
    [api, selected],
  );
  const entries = live.data?.data ?? [];
  const found = selected ? entries.some((entry) => entry.id === selected) : false;
  const rowOf = useScrolledTo(found ? selected : undefined);
  return (
    <Screen
      title="Request journal"
      intro="The account's latest requests to /v1, newest first, whatever their outcome. The dashboard's own calls go to /_sandbox and never show here."
    >
      <LiveState live={live} what="the journal" />
      {selected && live.loaded && !found && (
        <p class="notice" role="status">
          Request <span class="mono">{selected}</span> is no longer in the journal, which keeps the account's
          last {KEPT.toLocaleString('en')} requests and starts empty after a restart.
        </p>
      )}
      {selected && found && (
        <p>
          <a href={hrefOf({ screen: 'requests' })}>All requests</a>
        </p>
      )}
      <Table caption="Newest first" head={['When', 'Request', 'Status', 'Took']} empty="No requests yet.">
        {entries.flatMap((entry) => {
          const chosen = entry.id === selected;
          const rows = [
            <tr
              key={entry.id}
              id={`request-${entry.id}`}
              ref={chosen ? rowOf : undefined}
              class={chosen ? 'chosen' : undefined}
              aria-current={chosen ? 'true' : undefined}
            >
              <td>
                <Instant value={entry.at} />
              </td>
              <td class="mono">
                {entry.method} {entry.path}
                {entry.query ? `?${entry.query}` : ''}
              </td>
              <td>
                <span
                  class={
                    entry.status >= 400 || entry.status === 0
                      ? 'status status-failed'
                      : 'status status-succeeded'
                  }
                >
                  {entry.status === 0 ? 'dropped' : entry.status}
                </span>
              </td>
              <td>{entry.duration_ms} ms</td>
            </tr>,
          ];
          if (chosen) {
            rows.push(
              <tr key={`${entry.id}-details`} class="details-row">
                <td colSpan={4}>
                  <RequestFacts entry={entry} />
                </td>
              </tr>,
            );
          }
          return rows;
        })}
      </Table>
    </Screen>
  );
}

/** What the report judges a request by, beyond the row: its id, key, error and the wall clock. */
function RequestFacts(props: { entry: JournalEntry }) {
  const { entry } = props;
  return (
    <dl class="facts">
      <dt>Request</dt>
      <dd class="mono">{entry.id}</dd>
      <dt>Arrived (wall clock)</dt>
      <dd>
        <time dateTime={entry.wall_at}>{formatInstant(entry.wall_at)}</time>
      </dd>
      <dt>Key</dt>
      <dd class="mono">{entry.key_id}</dd>
      <dt>Error</dt>
      <dd>{entry.code ?? '—'}</dd>
      <dt>Retry-After</dt>
      <dd>{entry.retry_after === null ? '—' : `${entry.retry_after} s`}</dd>
    </dl>
  );
}
