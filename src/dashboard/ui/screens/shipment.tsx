import { useEffect, useState } from 'preact/hooks';
import { ApiFailure, describeFailure } from '../api.js';
import {
  ActionButton,
  Choice,
  ConfirmButton,
  Instant,
  LiveState,
  Screen,
  Status,
  Table,
} from '../components.js';
import { saveFile } from '../download.js';
import { formatInstant, formatMoney, formatPlace, statusWords } from '../format.js';
import { usePoll, useSession } from '../live.js';
import type { Label, List, ParcelOverview, Rate, Scenario, Shipment } from '../types.js';
import { voidRefusal } from '../voiding.js';

interface ShipmentView {
  shipment: Shipment | undefined;
  parcel: ParcelOverview | undefined;
}

/**
 * One shipment: what it is, its label, its parcel's journey, and QA's levers on all three. Everything
 * here goes through `/_sandbox` (the twins of the `/v1` routes for its actions): nothing QA does here
 * counts as the account's client's requests.
 */
export function ShipmentScreen(props: { id: string }) {
  const { api } = useSession();
  const live = usePoll<ShipmentView>(async () => {
    const found = await api.get<List<Shipment>>(`/_sandbox/shipments?q=${encodeURIComponent(props.id)}`);
    const shipment = found.data.find((candidate) => candidate.id === props.id);
    if (!shipment?.label_id) return { shipment, parcel: undefined };
    const parcel = await api
      .get<ParcelOverview>(`/_sandbox/shipments/${shipment.id}/tracking`)
      .catch((failure: unknown) => {
        // The label went between the two reads (a void): the next read shows the shipment without it.
        if (failure instanceof ApiFailure && failure.code === 'no_active_label') return undefined;
        throw failure;
      });
    return { shipment, parcel };
  }, [api, props.id]);
  const { shipment, parcel } = live.data ?? { shipment: undefined, parcel: undefined };

  if (live.loaded && live.error === undefined && !shipment) {
    return (
      <Screen title="No such shipment">
        <p>
          This account has no shipment <span class="mono">{props.id}</span>.{' '}
          <a href="#/shipments">All shipments</a>
        </p>
      </Screen>
    );
  }

  return (
    <Screen title={`Shipment ${props.id}`}>
      <p>
        <a href="#/shipments">All shipments</a>
      </p>
      <LiveState live={live} what="the shipment" />
      {shipment && (
        <div class="columns">
          <div class="column">
            <Summary shipment={shipment} refresh={live.refresh} />
            <Parcel shipment={shipment} parcel={parcel} refresh={live.refresh} />
          </div>
          <div class="column">
            <LabelPanel shipment={shipment} parcel={parcel} refresh={live.refresh} />
            <Rates shipment={shipment} />
          </div>
        </div>
      )}
    </Screen>
  );
}

function Summary(props: { shipment: Shipment; refresh: () => Promise<void> }) {
  const { api } = useSession();
  const { shipment } = props;
  const [format, setFormat] = useState('pdf');
  const cancellable = shipment.status === 'created' || shipment.status === 'label_generated';
  return (
    <section class="panel" aria-labelledby="summary-title">
      <h2 id="summary-title">Summary</h2>
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          <Status value={shipment.status} />
        </dd>
        <dt>Carrier</dt>
        <dd>
          {shipment.carrier} · {shipment.service} · {formatMoney(shipment.rate)}
        </dd>
        <dt>Tracking number</dt>
        <dd class="mono">{shipment.tracking_number ?? '—'}</dd>
        <dt>Reference</dt>
        <dd>{shipment.reference ?? '—'}</dd>
        <dt>From</dt>
        <dd>
          {shipment.from.name}, {formatPlace(shipment.from)}
        </dd>
        <dt>To</dt>
        <dd>
          {shipment.to.name}, {formatPlace(shipment.to)}
        </dd>
        <dt>Created</dt>
        <dd>
          <Instant value={shipment.created_at} />
        </dd>
        {shipment.cancelled_at && (
          <>
            <dt>Cancelled</dt>
            <dd>
              <Instant value={shipment.cancelled_at} />
            </dd>
          </>
        )}
      </dl>
      <div class="actions">
        {shipment.status === 'created' && !shipment.label_id && (
          <div class="inline-form">
            <Choice
              label="Label format"
              name="label-format"
              value={format}
              onChange={setFormat}
              options={[
                { value: 'pdf', label: 'PDF' },
                { value: 'png', label: 'PNG' },
                { value: 'zpl', label: 'ZPL' },
              ]}
            />
            <ActionButton
              kind="primary"
              run={() => api.post<Label>('/_sandbox/labels', { shipment_id: shipment.id, format })}
              then={props.refresh}
            >
              Generate label
            </ActionButton>
          </div>
        )}
        {cancellable && (
          <ConfirmButton
            kind="danger"
            question={`Cancel shipment ${shipment.id}?`}
            consequences={
              <p>
                The shipment becomes <strong>cancelled</strong> and can get no label.
                {shipment.label_id && (
                  <>
                    {' '}
                    Its label <span class="mono">{shipment.label_id}</span> is voided, and refunded if still
                    within its 30 days.
                  </>
                )}{' '}
                Its webhooks are told ({shipment.label_id ? 'label.voided, then ' : ''}shipment.cancelled).
                This cannot be undone.
              </p>
            }
            confirm="Cancel the shipment"
            keep="Keep the shipment"
            run={() => api.delete(`/_sandbox/shipments/${shipment.id}`)}
            then={props.refresh}
          >
            Cancel shipment
          </ConfirmButton>
        )}
      </div>
    </section>
  );
}

function Parcel(props: {
  shipment: Shipment;
  parcel: ParcelOverview | undefined;
  refresh: () => Promise<void>;
}) {
  const { api } = useSession();
  const { shipment, parcel } = props;
  const [scenarios, setScenarios] = useState<Scenario[]>([]);
  const [scenario, setScenario] = useState('');
  useEffect(() => {
    api
      .get<List<Scenario>>('/_sandbox/scenarios')
      .then((list) => {
        setScenarios(list.data);
        setScenario((current) => current || (list.data[0]?.name ?? ''));
      })
      .catch(() => setScenarios([]));
  }, [api]);

  if (!parcel) {
    return (
      <section class="panel" aria-labelledby="parcel-title">
        <h2 id="parcel-title">Tracking</h2>
        <p class="muted">
          {shipment.status === 'cancelled'
            ? 'A cancelled shipment has no parcel to track.'
            : 'No label yet: generate one to start the parcel on its journey.'}
        </p>
      </section>
    );
  }

  return (
    <section class="panel" aria-labelledby="parcel-title">
      <h2 id="parcel-title">Tracking</h2>
      <p>
        <span class="mono">{parcel.tracking_number}</span> is <Status value={parcel.tracking.status} />
        {parcel.scenario && (
          <>
            , playing the <strong>{parcel.scenario}</strong> scenario
          </>
        )}
        . Estimated delivery <Instant value={parcel.tracking.estimated_delivery} />.
      </p>
      {parcel.can_advance_to.length === 0 ? (
        <p class="muted">The parcel's journey is over: no status can be forced now.</p>
      ) : (
        <fieldset class="actions force">
          <legend>Force a tracking status</legend>
          {parcel.can_advance_to.map((status) => (
            <ActionButton
              key={status}
              run={() => api.post(`/_sandbox/shipments/${shipment.id}/advance`, { status })}
              then={props.refresh}
            >
              Force {statusWords(status)}
            </ActionButton>
          ))}
        </fieldset>
      )}
      {scenarios.length > 0 && parcel.can_advance_to.length > 0 && (
        <div class="inline-form">
          <Choice
            label="Scenario"
            name="scenario"
            value={scenario}
            onChange={setScenario}
            options={scenarios.map((s) => ({ value: s.name, label: `${s.name}: ${s.description}` }))}
          />
          <ActionButton
            run={() => api.post(`/_sandbox/shipments/${shipment.id}/scenario`, { name: scenario })}
            then={props.refresh}
          >
            Run scenario
          </ActionButton>
        </div>
      )}
      <Table
        caption="Timeline, newest first"
        head={['Status', 'What happened', 'Where', 'When']}
        empty="No events yet."
      >
        {parcel.tracking.events.map((event, i) => (
          <tr key={`${event.occurred_at}-${i}`}>
            <td>
              <Status value={event.status} />
            </td>
            <td>{event.description}</td>
            <td>{event.location}</td>
            <td>
              <Instant value={event.occurred_at} />
            </td>
          </tr>
        ))}
      </Table>
      {parcel.upcoming.length > 0 && (
        <Table
          caption="Next in the scenario, on the account's clock"
          head={['Status', 'What will happen', 'Where', 'Due']}
        >
          {parcel.upcoming.map((step, i) => (
            <tr key={`${step.due_at}-${i}`}>
              <td>
                <Status value={step.status} />
              </td>
              <td>{step.description}</td>
              <td>{step.location}</td>
              <td>
                <Instant value={step.due_at} />
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}

/**
 * The label: its drawing inline (a PNG whatever the format), its file to download, and its void, which
 * is offered only while the specification allows it (see voiding.ts).
 */
function LabelPanel(props: {
  shipment: Shipment;
  parcel: ParcelOverview | undefined;
  refresh: () => Promise<void>;
}) {
  const { api, clock } = useSession();
  const labelId = props.shipment.label_id;
  const [label, setLabel] = useState<Label | undefined>(undefined);
  const [preview, setPreview] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);

  useEffect(() => {
    setLabel(undefined);
    setPreview(undefined);
    setError(undefined);
    if (!labelId) return;
    let url: string | undefined;
    let gone = false;
    // Read once per label: a label changes only by being voided, which takes it off the shipment.
    api
      .get<Label>(`/_sandbox/labels/${labelId}`)
      .then((found) => !gone && setLabel(found))
      .catch((failure: unknown) => !gone && setError(describeFailure(failure)));
    api
      .blob(`/_sandbox/labels/${labelId}/preview`)
      .then((blob) => {
        if (gone) return;
        url = URL.createObjectURL(blob);
        setPreview(url);
      })
      .catch((failure: unknown) => !gone && setError(describeFailure(failure)));
    return () => {
      gone = true;
      if (url) URL.revokeObjectURL(url);
    };
  }, [api, labelId]);

  if (!labelId) {
    return (
      <section class="panel" aria-labelledby="label-title">
        <h2 id="label-title">Label</h2>
        <p class="muted">No active label.</p>
      </section>
    );
  }
  const events = props.parcel?.label_id === labelId ? props.parcel.tracking.events : undefined;
  // Until the label, its parcel and the clock are known, nothing is offered.
  const refusal = label && events && clock ? voidRefusal(label, events, clock.now) : 'unknown';
  return (
    <section class="panel" aria-labelledby="label-title">
      <h2 id="label-title">Label</h2>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {label && (
        <p>
          <span class="mono">{label.id}</span>, {label.format.toUpperCase()}, <Status value={label.status} />,
          generated <Instant value={label.created_at} />. Its pre-signed URL expires{' '}
          <Instant value={label.expires_at} />.
        </p>
      )}
      <div class="actions">
        {label && (
          // Through the sandbox, not the label's URL: a fetch of that URL is one the report judges.
          <ActionButton
            run={() =>
              saveFile(api.blob(`/_sandbox/labels/${label.id}/download`), `${label.id}.${label.format}`)
            }
          >
            Download label ({label.format.toUpperCase()})
          </ActionButton>
        )}
        {label && refusal === undefined && (
          <ConfirmButton
            kind="danger"
            question={`Void label ${label.id}?`}
            consequences={
              <p>
                The label stops being valid and its rate, {formatMoney(props.shipment.rate)}, is refunded,
                expected {clock ? formatInstant(addDays(clock.now, 14)) : 'in 14 days'}. The shipment goes
                back to <strong>created</strong> and can get a new label. Its webhooks are told
                (label.voided). This cannot be undone.
              </p>
            }
            confirm="Void the label"
            keep="Keep the label"
            run={() => api.delete(`/_sandbox/labels/${label.id}`)}
            then={props.refresh}
          >
            Void label
          </ConfirmButton>
        )}
      </div>
      {label && refusal !== undefined && refusal !== 'unknown' && <p class="muted">{refusal}</p>}
      {preview ? (
        <img class="label-preview" src={preview} alt={`The label of shipment ${props.shipment.id}`} />
      ) : (
        !error && <p class="muted">Drawing the label…</p>
      )}
    </section>
  );
}

/** The carriers' rates for this parcel and route, the shipment's own marked. Read once: rates do not change. */
function Rates(props: { shipment: Shipment }) {
  const { api } = useSession();
  const { shipment } = props;
  const [rates, setRates] = useState<Rate[] | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  // By id: a shipment's route and parcel never change, though each poll makes new objects of them.
  useEffect(() => {
    api
      .post<List<Rate>>('/_sandbox/rates', { from: shipment.from, to: shipment.to, parcel: shipment.parcel })
      .then((list) => setRates(list.data))
      .catch((failure: unknown) => setError(describeFailure(failure)));
  }, [api, shipment.id]);
  return (
    <section class="panel" aria-labelledby="rates-title">
      <h2 id="rates-title">Rates</h2>
      {error && <p class="error">{error}</p>}
      {rates && (
        <Table
          caption="Every carrier's rate for this parcel, cheapest first"
          head={['Carrier', 'Service', 'Rate', 'Days']}
        >
          {rates.map((rate) => {
            const chosen = rate.carrier === shipment.carrier && rate.service === shipment.service;
            return (
              <tr key={`${rate.carrier}-${rate.service}`} class={chosen ? 'chosen' : undefined}>
                <td>{rate.carrier}</td>
                <td>
                  {rate.service}
                  {chosen && <span class="tag"> this shipment</span>}
                </td>
                <td>{formatMoney(rate.rate)}</td>
                <td>{rate.estimated_days}</td>
              </tr>
            );
          })}
        </Table>
      )}
    </section>
  );
}

/** A timestamp `days` later, in the API's form. */
function addDays(timestamp: string, days: number): string {
  return new Date(Date.parse(timestamp) + days * 24 * 3600 * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
