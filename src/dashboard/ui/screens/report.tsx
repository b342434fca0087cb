import { ActionButton, Instant, LiveState, Screen, Status } from '../components.js';
import { saveFile } from '../download.js';
import { evidenceLink } from '../evidence.js';
import { formatInstant } from '../format.js';
import { usePoll, useSession } from '../live.js';
import { hrefOf } from '../routes.js';
import type { Check, Evidence, Report } from '../types.js';

/**
 * How the account's own client behaves, as the sandbox judged it (`GET /_sandbox/report`): each check
 * with its verdict and summary, and its evidence linked to where each request, delivery or label
 * lives in the dashboard. This screen reads `/_sandbox` only: a `/v1` read would be one of the
 * client's requests, which the report judges.
 */
export function ReportScreen() {
  const { api } = useSession();
  const live = usePoll(() => api.get<Report>('/_sandbox/report'), [api]);
  const report = live.data;
  return (
    <Screen
      title="Integration report"
      intro="How your integration behaves, judged from the requests and webhook deliveries the sandbox saw for this account: what it does that would break against the live service, and where."
    >
      <LiveState live={live} what="the report" />
      {report && (
        <>
          <Verdict report={report} />
          <ol class="checks" aria-label="Checks">
            {report.checks.map((check) => (
              <CheckResult key={check.id} check={check} />
            ))}
          </ol>
        </>
      )}
    </Screen>
  );
}

function Verdict(props: { report: Report }) {
  const { api } = useSession();
  const { report } = props;
  const count = (status: Check['status']) => report.checks.filter((check) => check.status === status).length;
  return (
    <section class="panel" aria-labelledby="verdict-title">
      <h2 id="verdict-title">
        Verdict: <Status value={report.status} />
      </h2>
      <p>
        {plural(count('fail'), 'check fails', 'checks fail')}, {count('pass')} pass, {count('not_observed')}{' '}
        {count('not_observed') === 1 ? 'has' : 'have'} seen nothing to judge yet. Judged at{' '}
        <Instant value={report.generated_at} /> on the account's clock,{' '}
        <time dateTime={report.generated_wall_at}>{formatInstant(report.generated_wall_at)}</time> by the wall
        clock.
      </p>
      <div class="actions">
        <ActionButton
          run={() =>
            saveFile(
              api.blob('/_sandbox/report?format=junit'),
              `shipping-sandbox-report-${report.account_id}.xml`,
            )
          }
        >
          Download JUnit XML
        </ActionButton>
      </div>
      <p class="hint">
        In CI, <code>npx shipping-sandbox report --junit report.xml</code> writes the same file and exits with
        1 when a check fails.
      </p>
    </section>
  );
}

/** One check: its verdict, what it found, and the occurrences it judged, each linked to its place. */
function CheckResult(props: { check: Check }) {
  const { check } = props;
  const titleId = `check-${check.id}`;
  return (
    <li class={`panel check-result check-${check.status}`}>
      <h2 id={titleId}>
        <Status value={check.status} /> {check.title}
      </h2>
      <p class="muted">
        <span class="mono">{check.id}</span> · {countsText(check.counts)}
      </p>
      <p>{check.summary}</p>
      {check.id === 'verifies_signatures' && check.status === 'not_observed' && (
        <p>
          To judge it, press <strong>Probe signatures</strong> on the{' '}
          <a href={hrefOf({ screen: 'webhooks' })}>Webhooks screen</a>, or run{' '}
          <code>shipping-sandbox probe wh_…</code>.
        </p>
      )}
      {check.evidence.length > 0 && (
        // A failing check's evidence is what one came for: it starts open.
        <details open={check.status === 'fail'}>
          <summary>
            Evidence<span class="visually-hidden"> of “{check.title}”</span> ({check.evidence.length})
          </summary>
          <ul class="evidence">
            {check.evidence.map((item) => (
              <EvidenceItem key={`${item.kind}-${item.id}`} item={item} />
            ))}
          </ul>
        </details>
      )}
    </li>
  );
}

function EvidenceItem(props: { item: Evidence }) {
  const { item } = props;
  const link = evidenceLink(item);
  return (
    <li>
      <p class="evidence-detail">{item.detail}</p>
      <p class="muted">
        <Instant value={item.at} /> on the account's clock ·{' '}
        {item.wall_at ? <time dateTime={item.wall_at}>{formatInstant(item.wall_at)}</time> : '—'} by the wall
        clock
      </p>
      <a href={link.href}>{link.text}</a>
    </li>
  );
}

function countsText(counts: Check['counts']): string {
  if (counts.passed === 0 && counts.failed === 0) return 'nothing judged yet';
  return `${counts.failed} failing, ${counts.passed} passing`;
}

function plural(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`;
}
