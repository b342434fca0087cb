import { useState } from 'preact/hooks';
import {
  ActionButton,
  ActionForm,
  Choice,
  Field,
  Instant,
  LiveState,
  MoreThanShown,
  Screen,
  Table,
} from '../components.js';
import { usePoll, useSession } from '../live.js';
import { type Fault, type Page, WHOLE_PAGE } from '../types.js';

/** The account's fault rules: errors, delays and dropped connections injected into its /v1 requests. */
export function FaultsScreen() {
  const { api } = useSession();
  const live = usePoll(() => api.get<Page<Fault>>(`/_sandbox/faults?limit=${WHOLE_PAGE}`), [api]);
  const faults = live.data?.data ?? [];
  const [method, setMethod] = useState('');
  const [path, setPath] = useState('/v1/shipments*');
  const [status, setStatus] = useState('503');
  const [code, setCode] = useState('');
  const [delay, setDelay] = useState('');
  const [times, setTimes] = useState('');
  const [drop, setDrop] = useState(false);

  const rule = () => ({
    path,
    ...(method ? { method } : {}),
    ...(status && !drop ? { status: Number(status) } : {}),
    ...(code && !drop ? { code } : {}),
    ...(delay ? { delay_ms: Number(delay) } : {}),
    ...(times ? { times: Number(times) } : {}),
    ...(drop ? { drop: true } : {}),
  });

  return (
    <Screen
      title="Faults"
      intro="Rules that make the account's matching /v1 requests fail, slow down or lose their connection: to see how your client copes. This dashboard's own actions go through /_sandbox, which no rule touches."
    >
      <LiveState live={live} what="the fault rules" />
      <Table
        caption="Rules, newest first"
        head={['Request', 'Effect', 'Left', 'Created', '']}
        empty="No fault rules."
      >
        {faults.map((fault) => (
          <tr key={fault.id}>
            <td class="mono">
              {fault.method ?? 'any'} {fault.path}
            </td>
            <td>
              {fault.drop
                ? 'drops the connection'
                : `${fault.status ?? 'no error'}${fault.code ? ` ${fault.code}` : ''}`}
              {fault.delay_ms > 0 && `, after ${fault.delay_ms} ms`}
            </td>
            <td>{fault.remaining ?? 'until removed'}</td>
            <td>
              <Instant value={fault.created_at} />
            </td>
            <td>
              <ActionButton
                label={`Remove the fault on ${fault.method ?? 'any'} ${fault.path}`}
                run={() => api.delete(`/_sandbox/faults/${fault.id}`)}
                then={() => live.refresh()}
              >
                Remove
              </ActionButton>
            </td>
          </tr>
        ))}
      </Table>
      <MoreThanShown page={live.data} what="rules" />
      {faults.length > 0 && (
        <ActionButton kind="danger" run={() => api.delete('/_sandbox/faults')} then={() => live.refresh()}>
          Remove every fault
        </ActionButton>
      )}
      <section class="panel" aria-labelledby="new-fault-title">
        <h2 id="new-fault-title">Add a fault</h2>
        <ActionForm
          label="Add a fault"
          submit="Add fault"
          run={() => api.post('/_sandbox/faults', rule())}
          then={() => live.refresh()}
          class="grid-form"
        >
          <Choice
            label="Method"
            name="fault-method"
            value={method}
            onChange={setMethod}
            options={[{ value: '', label: 'Any' }, 'GET', 'POST', 'PATCH', 'DELETE']}
          />
          <Field
            label="Path"
            name="fault-path"
            value={path}
            onInput={setPath}
            hint="Exact, or a prefix ending in *."
            required
          />
          <Field label="Status" name="fault-status" type="number" value={status} onInput={setStatus} />
          <Field
            label="Error code"
            name="fault-code"
            value={code}
            onInput={setCode}
            placeholder="service_unavailable"
          />
          <Field label="Delay (ms)" name="fault-delay" type="number" value={delay} onInput={setDelay} />
          <Field
            label="Times"
            name="fault-times"
            type="number"
            value={times}
            onInput={setTimes}
            hint="Empty: until removed."
          />
          <label class="check">
            <input
              type="checkbox"
              checked={drop}
              onChange={(event) => setDrop((event.target as HTMLInputElement).checked)}
            />{' '}
            Drop the connection instead of answering
          </label>
        </ActionForm>
      </section>
    </Screen>
  );
}
