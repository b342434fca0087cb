import { Instant, LiveState, Screen, Table } from '../components.js';
import { usePoll, useSession } from '../live.js';
import type { JournalEntry, List } from '../types.js';

/** The account's latest API requests as the sandbox saw them (WireMock's request journal). */
export function RequestsScreen() {
  const { api } = useSession();
  const live = usePoll(() => api.get<List<JournalEntry>>('/_sandbox/requests?limit=200'), [api]);
  const entries = live.data?.data ?? [];
  return (
    <Screen
      title="Request journal"
      intro="The account's latest requests to /v1, newest first, whatever their outcome: the dashboard's own reads of /v1 show here too."
    >
      <LiveState live={live} what="the journal" />
      <Table caption="Newest first" head={['When', 'Request', 'Status', 'Took']} empty="No requests yet.">
        {entries.map((entry, i) => (
          <tr key={`${entry.at}-${i}`}>
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
          </tr>
        ))}
      </Table>
    </Screen>
  );
}
