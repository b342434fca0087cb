import { useState } from 'preact/hooks';
import { ActionButton, Choice, Field, Instant, LiveState, Screen, Status, Table } from '../components.js';
import { statusWords } from '../format.js';
import { usePoll, useSession } from '../live.js';
import { hrefOf } from '../routes.js';
import { type List, SHIPMENT_STATUSES, type Shipment } from '../types.js';

/** A shipment a QA person can make with one click: a domestic parcel that every carrier rates. */
export function sampleShipment(n: number) {
  return {
    from: {
      name: 'Ada Lovelace',
      address1: '417 Montgomery St',
      city: 'San Francisco',
      state: 'CA',
      zip: '94104',
      country: 'US',
    },
    to: {
      name: 'Grace Hopper',
      address1: '350 5th Ave',
      city: 'New York',
      state: 'NY',
      zip: '10118',
      country: 'US',
    },
    parcel: { weight: 1200, length: 30, width: 20, height: 10 },
    reference: `qa-${n}`,
  };
}

export function ShipmentsScreen() {
  const { api } = useSession();
  const [q, setQ] = useState('');
  const [status, setStatus] = useState('');
  const query = new URLSearchParams({ limit: '100' });
  if (q.trim()) query.set('q', q.trim());
  if (status) query.set('status', status);
  const path = `/_sandbox/shipments?${query}`;
  const live = usePoll(() => api.get<List<Shipment>>(path), [api, path]);
  const shipments = live.data?.data ?? [];

  return (
    <Screen
      title="Shipments"
      intro="The account's newest shipments; the list follows changes as they happen."
    >
      <form class="filters" aria-label="Find shipments" onSubmit={(event) => event.preventDefault()}>
        <Field
          label="Search"
          name="q"
          value={q}
          onInput={setQ}
          placeholder="shp_…, a tracking number, or the start of a reference"
        />
        <Choice
          label="Status"
          name="status"
          value={status}
          onChange={setStatus}
          options={[
            { value: '', label: 'Any status' },
            ...SHIPMENT_STATUSES.map((s) => ({ value: s, label: statusWords(s) })),
          ]}
        />
        <ActionButton
          run={() => api.post<Shipment>('/_sandbox/shipments', sampleShipment(Date.now() % 100_000))}
          then={() => live.refresh()}
        >
          Create a sample shipment
        </ActionButton>
      </form>
      <LiveState live={live} what="the shipments" />
      <Table
        caption={q || status ? 'Matching shipments, newest first' : 'Newest shipments first'}
        head={['Shipment', 'Status', 'Carrier', 'Tracking number', 'Reference', 'Created']}
        empty={q || status ? 'No shipment matches.' : 'No shipments yet.'}
      >
        {shipments.map((shipment) => (
          <tr key={shipment.id}>
            <td>
              <a href={hrefOf({ screen: 'shipment', id: shipment.id })} class="mono">
                {shipment.id}
              </a>
            </td>
            <td>
              <Status value={shipment.status} />
            </td>
            <td>
              {shipment.carrier} <span class="muted">{shipment.service}</span>
            </td>
            <td class="mono">{shipment.tracking_number ?? <span class="muted">—</span>}</td>
            <td>{shipment.reference ?? <span class="muted">—</span>}</td>
            <td>
              <Instant value={shipment.created_at} />
            </td>
          </tr>
        ))}
      </Table>
    </Screen>
  );
}
