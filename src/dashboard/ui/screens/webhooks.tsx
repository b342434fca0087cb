import { useEffect, useState } from 'preact/hooks';
import { describeFailure } from '../api.js';
import {
  ActionButton,
  ActionForm,
  Choice,
  Field,
  Instant,
  LiveState,
  MoreThanShown,
  Screen,
  Status,
  Table,
} from '../components.js';
import { prettyBody } from '../format.js';
import { usePoll, useSession } from '../live.js';
import { attemptOutcome } from '../outcome.js';
import { hrefOf } from '../routes.js';
import { useScrolledTo } from '../scroll.js';
import {
  type Attempt,
  type AttemptInFull,
  EVENT_TYPES,
  type List,
  type Page,
  type ProbeResult,
  type Webhook,
  WHOLE_PAGE,
} from '../types.js';
import { ListenSessions } from './listeners.js';

/**
 * The account's webhook endpoints and, for the one picked, every delivery attempt as it happens:
 * what was sent, what came back, and when the next retry is due. With a delivery's id
 * (`#/webhooks/wh_…/dlv_…`, the integration report's evidence links here) that attempt is marked,
 * opened and scrolled to.
 */
export function WebhooksScreen(props: { selected: string | undefined; delivery?: string | undefined }) {
  const { api } = useSession();
  const webhooks = usePoll(() => api.get<Page<Webhook>>(`/_sandbox/webhooks?limit=${WHOLE_PAGE}`), [api]);
  const list = webhooks.data?.data ?? [];
  // The first endpoint is shown when none is picked: most accounts have one.
  const selected =
    list.find((webhook) => webhook.id === props.selected) ?? (props.selected ? undefined : list[0]);
  const [probed, setProbed] = useState<{ webhook: Webhook; result: ProbeResult } | undefined>(undefined);

  return (
    <Screen
      title="Webhooks"
      intro="Deliveries appear here as they are sent, with the request and the answer."
    >
      <section class="panel" aria-labelledby="endpoints-title">
        <h2 id="endpoints-title">Endpoints</h2>
        <LiveState live={webhooks} what="the webhooks" />
        <Table
          caption="Endpoints, newest first"
          head={['Endpoint', 'Status', 'Events', '']}
          empty="No endpoints yet."
        >
          {list.map((webhook) => (
            <tr key={webhook.id} class={webhook.id === selected?.id ? 'chosen' : undefined}>
              <td>
                <a
                  href={hrefOf({ screen: 'webhooks', id: webhook.id })}
                  aria-current={webhook.id === selected?.id ? 'true' : undefined}
                >
                  {webhook.url}
                </a>
                <div class="muted mono">{webhook.id}</div>
              </td>
              <td>
                <Status value={webhook.status} />
              </td>
              <td>{webhook.events.join(', ')}</td>
              <td class="row-actions">
                <ActionButton
                  label={`Probe ${webhook.url}: send a genuine and a forged delivery`}
                  run={() => api.post<ProbeResult>(`/_sandbox/webhooks/${webhook.id}/probe`)}
                  then={(result) => setProbed({ webhook, result: result as ProbeResult })}
                >
                  Probe signatures
                </ActionButton>
                {webhook.status !== 'active' && (
                  <ActionButton
                    label={`Re-enable ${webhook.url}`}
                    run={() => api.patch(`/_sandbox/webhooks/${webhook.id}`, { status: 'active' })}
                    then={() => webhooks.refresh()}
                  >
                    Re-enable
                  </ActionButton>
                )}
              </td>
            </tr>
          ))}
        </Table>
        <MoreThanShown page={webhooks.data} what="webhooks" />
        {probed && <ProbeOutcome webhook={probed.webhook} result={probed.result} />}
        <details class="add">
          <summary>Add an endpoint</summary>
          <AddEndpoint added={() => webhooks.refresh()} />
        </details>
      </section>
      <ListenSessions />
      <TriggerEvent />
      {selected && <Deliveries key={selected.id} webhook={selected} highlight={props.delivery} />}
      {props.selected && webhooks.loaded && !selected && (
        <p class="error" role="alert">
          This account has no webhook {props.selected}.
        </p>
      )}
    </Screen>
  );
}

function AddEndpoint(props: { added: () => unknown }) {
  const { api } = useSession();
  const [url, setUrl] = useState('');
  const [secret, setSecret] = useState('');
  return (
    <ActionForm
      label="Add an endpoint"
      submit="Add endpoint"
      run={() => api.post('/_sandbox/webhooks', { url, secret, events: [...EVENT_TYPES] })}
      then={() => {
        setUrl('');
        setSecret('');
        return props.added();
      }}
    >
      <Field label="URL" name="webhook-url" value={url} onInput={setUrl} placeholder="https://…" required />
      <Field
        label="Signing secret"
        name="webhook-secret"
        value={secret}
        onInput={setSecret}
        hint="At least 16 characters; deliveries are signed with it. It subscribes to every event."
        required
      />
    </ActionForm>
  );
}

function TriggerEvent() {
  const { api } = useSession();
  const [event, setEvent] = useState<string>('tracking.delivered');
  const [fired, setFired] = useState<string | undefined>(undefined);
  return (
    <section class="panel" aria-labelledby="trigger-title">
      <h2 id="trigger-title">Trigger an event</h2>
      <p class="intro">Sends an event with sample data to every endpoint subscribed to it.</p>
      <ActionForm
        label="Trigger an event"
        submit="Trigger event"
        run={() => api.post<{ id: string }>('/_sandbox/events/trigger', { event })}
        then={(result) => setFired(`Sent ${event} as ${(result as { id: string }).id}.`)}
        class="inline-form"
      >
        <Choice
          label="Event type"
          name="event-type"
          value={event}
          onChange={setEvent}
          options={EVENT_TYPES}
        />
      </ActionForm>
      {fired && (
        <p class="notice" role="status">
          {fired}
        </p>
      )}
    </section>
  );
}

/**
 * What a probe found: the receiver's two answers, in words. It judges no more than
 * `verifies_signatures` does, and the report says the same.
 */
function ProbeOutcome(props: { webhook: Webhook; result: ProbeResult }) {
  const { webhook, result } = props;
  const answer = (attempt: ProbeResult['genuine']) =>
    attempt.response_status === null
      ? `no answer (${attempt.error ?? 'none'})`
      : `${attempt.response_status}`;
  const genuineAccepted =
    result.genuine.response_status !== null &&
    result.genuine.response_status >= 200 &&
    result.genuine.response_status < 300;
  const verdict = result.verifies_signatures
    ? 'It verifies signatures: it accepted the genuine delivery and refused the forged one.'
    : genuineAccepted
      ? 'It does not verify signatures: it accepted the forged delivery as well.'
      : 'This tells nothing: the receiver did not accept the genuine delivery either.';
  const tone = result.verifies_signatures ? 'verdict-pass' : genuineAccepted ? 'verdict-fail' : '';
  return (
    <div class={`notice ${tone}`} role="status">
      <p>
        Probe of {webhook.url}: the genuine delivery was answered {answer(result.genuine)}, the forged one{' '}
        {answer(result.forged)}. {verdict}
      </p>
      <p>
        <a href={hrefOf({ screen: 'webhooks', id: webhook.id, delivery: result.forged.delivery_id })}>
          View the forged delivery
        </a>{' '}
        · <a href={hrefOf({ screen: 'report' })}>View the integration report</a>
      </p>
    </div>
  );
}

function Deliveries(props: { webhook: Webhook; highlight: string | undefined }) {
  const { api } = useSession();
  const { webhook, highlight } = props;
  const live = usePoll(
    () => api.get<List<Attempt>>(`/_sandbox/webhooks/${webhook.id}/deliveries?limit=100`),
    [api, webhook.id],
  );
  const attempts = live.data?.data ?? [];
  // The attempt a link pointed at starts open.
  const [open, setOpen] = useState<string | undefined>(highlight);
  useEffect(() => setOpen(highlight), [highlight]);
  const listed = highlight !== undefined && attempts.some((attempt) => attempt.id === highlight);
  const rowOf = useScrolledTo(listed ? highlight : undefined);

  return (
    <section class="panel" aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Deliveries to {webhook.url}</h2>
      <LiveState live={live} what="the deliveries" />
      <Table
        caption="Every attempt, newest first"
        head={['Event', 'Try', 'Status', 'Answer', 'Sent', 'Next retry', '']}
        empty="No deliveries yet."
      >
        {attempts.flatMap((attempt) => {
          const chosen = attempt.id === highlight;
          const rows = [
            <tr
              key={attempt.id}
              id={`delivery-${attempt.id}`}
              ref={chosen ? rowOf : undefined}
              class={chosen ? 'chosen' : undefined}
              aria-current={chosen ? 'true' : undefined}
            >
              <td>
                {attempt.event}
                <div class="muted mono">{attempt.event_id}</div>
              </td>
              <td>
                {attempt.attempt === 0 ? 'first' : `retry ${attempt.attempt}`}
                {attempt.redelivery && <span class="tag"> redelivery</span>}
                {attempt.probe && <span class="tag"> probe, {attempt.probe_signature} signature</span>}
              </td>
              <td>
                <Outcome attempt={attempt} />
              </td>
              <td>
                {attempt.response_status ?? <span class="muted">—</span>}
                {attempt.error && <div class="muted">{attempt.error_message ?? attempt.error}</div>}
              </td>
              <td>
                <Instant value={attempt.sent_at ?? attempt.scheduled_at} />
              </td>
              <td>
                <Instant value={attempt.next_attempt_at} />
              </td>
              <td class="row-actions">
                <button
                  type="button"
                  class="button plain"
                  aria-expanded={open === attempt.id}
                  onClick={() => setOpen(open === attempt.id ? undefined : attempt.id)}
                >
                  {open === attempt.id ? 'Hide details' : 'Show details'}
                  <span class="visually-hidden"> of {attempt.id}</span>
                </button>
                <ActionButton
                  label={`Redeliver ${attempt.event} (${attempt.id})`}
                  run={() => api.post(`/_sandbox/deliveries/${attempt.id}/redeliver`)}
                  then={() => live.refresh()}
                >
                  Redeliver
                </ActionButton>
              </td>
            </tr>,
          ];
          if (open === attempt.id) {
            rows.push(
              <tr key={`${attempt.id}-details`} class="details-row">
                <td colSpan={7}>
                  <AttemptDetails id={attempt.id} version={`${attempt.status}:${attempt.response_status}`} />
                </td>
              </tr>,
            );
          }
          return rows;
        })}
      </Table>
      {highlight && live.loaded && !listed && (
        <section aria-labelledby="linked-delivery-title">
          <h3 id="linked-delivery-title">
            Delivery <span class="mono">{highlight}</span>
          </h3>
          <p class="muted">Older than the newest 100 attempts listed above.</p>
          <AttemptDetails id={highlight} version="" />
        </section>
      )}
    </section>
  );
}

/** One attempt in full: the request as sent (headers, signature, body) and the answer. */
function AttemptDetails(props: { id: string; version: string }) {
  const { api } = useSession();
  const [attempt, setAttempt] = useState<AttemptInFull | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  // Read again when the attempt's outcome changes.
  useEffect(() => {
    api
      .get<AttemptInFull>(`/_sandbox/deliveries/${props.id}`)
      .then(setAttempt)
      .catch((failure: unknown) => setError(describeFailure(failure)));
  }, [api, props.id, props.version]);
  if (error) {
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  }
  if (!attempt) return <p class="muted">Reading the attempt…</p>;
  return (
    <div class="attempt">
      <div>
        <h3>Request</h3>
        {attempt.request ? (
          <>
            <p class="mono">
              {attempt.request.method} {attempt.request.url}
            </p>
            <dl class="headers">
              {Object.entries(attempt.request.headers).map(([name, value]) => (
                <div key={name}>
                  <dt>{name}</dt>
                  <dd class="mono">{value}</dd>
                </div>
              ))}
            </dl>
            <h4>Body</h4>
            <pre>{prettyBody(attempt.request.body)}</pre>
          </>
        ) : (
          <p class="muted">Nothing was sent{attempt.status === 'scheduled' ? ' yet' : ''}.</p>
        )}
      </div>
      <div>
        <h3>Answer</h3>
        <dl class="facts">
          <dt>Status</dt>
          <dd>{attempt.response_status ?? '—'}</dd>
          <dt>Time on the wire</dt>
          <dd>{attempt.duration_ms === null ? '—' : `${attempt.duration_ms} ms`}</dd>
          <dt>Error</dt>
          <dd>{attempt.error ? `${attempt.error}: ${attempt.error_message ?? ''}` : '—'}</dd>
          <dt>Next retry</dt>
          <dd>
            <Instant value={attempt.next_attempt_at} />
          </dd>
        </dl>
        <h4>Body (the first 1 KiB)</h4>
        <pre>{prettyBody(attempt.response_excerpt) || '(empty)'}</pre>
      </div>
    </div>
  );
}

/** An attempt's outcome in words; a forged probe delivery refused is a pass (see outcome.ts). */
function Outcome(props: { attempt: Attempt }) {
  const { words, tone } = attemptOutcome(props.attempt);
  return <span class={`status status-${tone}`}>{words}</span>;
}
