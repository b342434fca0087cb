import { useState } from 'preact/hooks';
import { ActionButton, ActionForm, Field, Instant, LiveState, Screen, Table } from '../components.js';
import { durationValue, formatInstant, statusWords } from '../format.js';
import { usePoll, useSession } from '../live.js';
import type { DueItem, List } from '../types.js';

interface Advanced {
  now: string;
  ran: { kind: string; due_at: string }[];
}

/** The account's clock: where it is, how fast it runs, moving it on, and what falls due next. */
export function ClockScreen() {
  const { api, clock, refreshClock } = useSession();
  const due = usePoll(() => api.get<List<DueItem>>('/_sandbox/clock/due?limit=50'), [api]);
  const [by, setBy] = useState('1h');
  const [speed, setSpeed] = useState('');
  const [outcome, setOutcome] = useState<string | undefined>(undefined);

  const afterChange = async () => {
    await Promise.all([refreshClock(), due.refresh()]);
  };
  const advance = async (amount: number | string | undefined) => {
    const advanced = await api.post<Advanced>(
      '/_sandbox/clock/advance',
      amount === undefined ? {} : { by: amount },
    );
    setOutcome(
      `Moved to ${formatInstant(advanced.now)}; ${advanced.ran.length} item${advanced.ran.length === 1 ? '' : 's'} ran on the way.`,
    );
    await afterChange();
  };

  return (
    <Screen
      title="Account clock"
      intro="Every time in this account runs on its own clock: tracking steps and webhook retries fall due on it, whether it runs or is moved on."
    >
      <section class="panel" aria-labelledby="clock-now">
        <h2 id="clock-now">Now</h2>
        {clock ? (
          <p class="clock-now">
            <time dateTime={clock.now}>{formatInstant(clock.now)}</time>
            <span>
              {clock.frozen ? 'Frozen' : 'Running'} at speed {clock.speed}
              {clock.speed !== 1 && ` (${clock.speed} s of account time per real second)`}
            </span>
          </p>
        ) : (
          <p class="muted">Reading the clock…</p>
        )}
        <div class="actions">
          {clock?.frozen ? (
            <ActionButton run={() => api.post('/_sandbox/clock', { frozen: false })} then={afterChange}>
              Unfreeze the clock
            </ActionButton>
          ) : (
            <ActionButton run={() => api.post('/_sandbox/clock', { frozen: true })} then={afterChange}>
              Freeze the clock
            </ActionButton>
          )}
          <ActionButton run={() => advance('1h')}>Advance 1 hour</ActionButton>
          <ActionButton run={() => advance('1d')}>Advance 1 day</ActionButton>
        </div>
        <ActionForm
          label="Advance the clock"
          submit="Advance the clock"
          run={() => advance(durationValue(by))}
        >
          <Field
            label="Advance by"
            name="advance-by"
            value={by}
            onInput={setBy}
            hint='Seconds, or a duration such as "90s", "5m", "2h", "3d". Everything due on the way runs first.'
          />
        </ActionForm>
        {outcome && (
          <p class="notice" role="status">
            {outcome}
          </p>
        )}
        <ActionForm
          label="Set the clock's speed"
          submit="Set speed"
          run={() => api.post('/_sandbox/clock', { speed: Number(speed) })}
          then={afterChange}
        >
          <Field
            label="Speed"
            name="speed"
            type="number"
            value={speed}
            onInput={setSpeed}
            placeholder={String(clock?.speed ?? 1)}
            hint="1 is real time; 3600 runs an hour each second."
          />
        </ActionForm>
      </section>
      <section class="panel" aria-labelledby="due-title">
        <h2 id="due-title">Due next</h2>
        <LiveState live={due} what="what falls due" />
        <Table caption="Soonest first" head={['Due', 'What', 'Details']} empty="Nothing is due.">
          {(due.data?.data ?? []).map((item) => (
            <tr key={item.id}>
              <td>
                <Instant value={item.due_at} />
              </td>
              <td>{item.kind === 'tracking.step' ? 'Tracking step' : 'Webhook attempt'}</td>
              <td>{describeDue(item)}</td>
            </tr>
          ))}
        </Table>
      </section>
    </Screen>
  );
}

function describeDue(item: DueItem): string {
  const detail = item.detail;
  if (item.kind === 'tracking.step') {
    return `${statusWords(String(detail.status))} at ${String(detail.location)} (${String(detail.scenario)}, label ${String(detail.label_id)})`;
  }
  if (item.kind === 'webhook.attempt') {
    const attempt = Number(detail.attempt);
    return `${String(detail.event)} to ${String(detail.webhook_id)}, ${attempt === 0 ? 'first try' : `retry ${attempt}`}`;
  }
  return item.subject;
}
