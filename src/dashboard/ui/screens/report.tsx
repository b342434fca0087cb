import { ApiFailure } from '../api.js';
import { LiveState, Screen, Status, Table } from '../components.js';
import { usePoll, useSession } from '../live.js';

interface Report {
  generated_at: string;
  checks: { id: string; status: string; summary: string; evidence: unknown[] }[];
}

/**
 * How the account's own client behaves, as the sandbox judged it (`GET /_sandbox/report`). A sandbox
 * without the report answers `404 route_not_found`, and the screen says so.
 */
export function ReportScreen() {
  const { api } = useSession();
  const live = usePoll(
    () =>
      api.get<Report>('/_sandbox/report').catch((failure: unknown) => {
        if (failure instanceof ApiFailure && failure.code === 'route_not_found') return null;
        throw failure;
      }),
    [api],
  );
  return (
    <Screen
      title="Integration report"
      intro="Checks of how your integration behaves (retries after 429, signature verification, fast webhook handlers), judged from what the sandbox saw."
    >
      <LiveState live={live} what="the report" />
      {live.data === null && <p class="muted">This sandbox does not make the integration report yet.</p>}
      {live.data && (
        <Table caption="Checks" head={['Check', 'Result', 'Summary']}>
          {live.data.checks.map((check) => (
            <tr key={check.id}>
              <td class="mono">{check.id}</td>
              <td>
                <Status value={check.status} />
              </td>
              <td>{check.summary}</td>
            </tr>
          ))}
        </Table>
      )}
    </Screen>
  );
}
