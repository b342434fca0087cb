import { useEffect, useState } from 'preact/hooks';
import { ApiFailure } from '../api.js';
import { LiveState, Screen, Status, Table } from '../components.js';
import { usePoll, useSession } from '../live.js';

const REPORT = '/_sandbox/report';

interface Report {
  generated_at: string;
  checks: { id: string; status: string; summary: string; evidence: unknown[] }[];
}

/**
 * How the account's own client behaves, as the sandbox judged it (`GET /_sandbox/report`). Whether
 * this sandbox makes the report is read from its OpenAPI document first, so a sandbox without it is
 * not asked for a route it does not have.
 */
export function ReportScreen() {
  const { api } = useSession();
  const [available, setAvailable] = useState<boolean | undefined>(undefined);
  useEffect(() => {
    fetch(new URL('openapi.json', new URL('.', window.location.href)).href)
      .then((response) => response.json() as Promise<{ paths?: Record<string, unknown> }>)
      .then((document) => setAvailable(Boolean(document.paths?.[REPORT])))
      .catch(() => setAvailable(true));
  }, []);
  const live = usePoll(
    () =>
      available
        ? api.get<Report>(REPORT).catch((failure: unknown) => {
            if (failure instanceof ApiFailure && failure.code === 'route_not_found') return null;
            throw failure;
          })
        : Promise.resolve(available === false ? null : undefined),
    [api, available],
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
