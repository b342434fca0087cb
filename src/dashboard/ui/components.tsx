import type { ComponentChildren, JSX } from 'preact';
import { useId, useRef, useState } from 'preact/hooks';
import { describeFailure } from './api.js';
import { formatInstant, relativeTo, statusWords } from './format.js';
import type { Live } from './live.js';
import { useSession } from './live.js';

interface ActionProps {
  /** The button's text: its name, which says what it does. */
  children: ComponentChildren;
  run: () => Promise<unknown>;
  /** Told once the action succeeded (to read the screen again, say). */
  then?: (result: unknown) => unknown;
  kind?: 'primary' | 'danger' | 'plain';
  label?: string;
  disabled?: boolean;
}

/**
 * Runs an action: busy while it runs (so a double click does not do it twice), and the API's own words
 * when it fails, shown as an error message beside the button (never in it).
 */
function useAction(props: Pick<ActionProps, 'run' | 'then'>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const run = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const result = await props.run();
      await props.then?.(result);
    } catch (failure) {
      setError(describeFailure(failure));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

/** A button that runs one action against the sandbox (see useAction). */
export function ActionButton(props: ActionProps) {
  const action = useAction(props);
  return (
    <span class="action">
      <button
        type="button"
        class={`button ${props.kind ?? 'plain'}`}
        onClick={action.run}
        disabled={action.busy || props.disabled}
        aria-busy={action.busy}
        aria-label={props.label}
      >
        {props.children}
      </button>
      {action.error && (
        <span class="error" role="alert">
          {action.error}
        </span>
      )}
    </span>
  );
}

/**
 * A button whose action cannot be undone, and so asks first: in the browser's own modal `<dialog>`,
 * which keeps the focus inside, closes on Escape and gives the focus back to the button. The dialog
 * says what will happen; its two buttons name the action and the way out (no bare "OK" or "Cancel").
 */
export function ConfirmButton(
  props: ActionProps & {
    /** The dialog's heading: the question, naming what it acts on. */
    question: string;
    /** What happens, and what follows from it. */
    consequences: ComponentChildren;
    /** The dialog's buttons: the one that does it, and the one that leaves things as they are. */
    confirm: string;
    keep: string;
  },
) {
  const action = useAction(props);
  const dialog = useRef<HTMLDialogElement>(null);
  const keep = useRef<HTMLButtonElement>(null);
  const id = useId();
  const ask = () => {
    dialog.current?.showModal();
    // The way out is where the keyboard starts: Enter alone never destroys anything.
    keep.current?.focus();
  };
  const confirmed = () => {
    dialog.current?.close();
    void action.run();
  };
  return (
    <span class="action">
      <button
        type="button"
        class={`button ${props.kind ?? 'plain'}`}
        onClick={ask}
        disabled={action.busy || props.disabled}
        aria-busy={action.busy}
        aria-label={props.label}
        aria-haspopup="dialog"
      >
        {props.children}
      </button>
      <dialog ref={dialog} class="confirm" aria-labelledby={`${id}-question`} aria-describedby={`${id}-what`}>
        <h2 id={`${id}-question`}>{props.question}</h2>
        <div id={`${id}-what`}>{props.consequences}</div>
        <div class="actions">
          <button type="button" class={`button ${props.kind ?? 'primary'}`} onClick={confirmed}>
            {props.confirm}
          </button>
          <button type="button" class="button plain" ref={keep} onClick={() => dialog.current?.close()}>
            {props.keep}
          </button>
        </div>
      </dialog>
      {action.error && (
        <span class="error" role="alert">
          {action.error}
        </span>
      )}
    </span>
  );
}

/**
 * A form whose submit runs one action: Enter in any field submits it. Failures show under it in the
 * API's words.
 */
export function ActionForm(props: {
  label: string;
  submit: string;
  run: () => Promise<unknown>;
  then?: (result: unknown) => unknown;
  children: ComponentChildren;
  class?: string;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const onSubmit = async (event: JSX.TargetedEvent<HTMLFormElement>) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      // Not `then?.(await run())`: without a `then`, that would never run the action at all.
      const result = await props.run();
      await props.then?.(result);
    } catch (failure) {
      setError(describeFailure(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class={`action-form ${props.class ?? ''}`} aria-label={props.label} onSubmit={onSubmit}>
      {props.children}
      <button type="submit" class="button primary" disabled={busy} aria-busy={busy}>
        {props.submit}
      </button>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** A status as a coloured word (the word carries the meaning; the colour only helps). */
export function Status(props: { value: string }) {
  return <span class={`status status-${props.value}`}>{statusWords(props.value)}</span>;
}

/** An instant on the account's clock, with how far it is from the clock's present. */
export function Instant(props: { value: string | null | undefined }) {
  const { clock } = useSession();
  if (!props.value) return <span class="muted">—</span>;
  const relative = relativeTo(props.value, clock?.now);
  return (
    <span class="instant">
      <time dateTime={props.value}>{formatInstant(props.value)}</time>
      {relative && <span class="muted"> ({relative})</span>}
    </span>
  );
}

/** What a polled read shows before its first answer, and when its latest read failed. */
export function LiveState(props: { live: Live<unknown>; what: string }) {
  const { live } = props;
  if (live.error !== undefined) {
    return (
      <p class="error" role="alert">
        Could not read {props.what}: {describeFailure(live.error)}
      </p>
    );
  }
  if (!live.loaded) return <p class="muted">Reading {props.what}…</p>;
  return null;
}

/** Under a list read as one page: says when the account holds more than the page shows. */
export function MoreThanShown(props: {
  page: { data: unknown[]; meta: { total: number } } | undefined;
  what: string;
}) {
  const { page } = props;
  if (!page || page.meta.total <= page.data.length) return null;
  return (
    <p class="muted">
      The newest {page.data.length} of {page.meta.total} {props.what}: delete some to see the others.
    </p>
  );
}

/** A table that scrolls sideways on a narrow screen rather than squeezing its columns. */
export function Table(props: {
  caption: string;
  head: string[];
  children: ComponentChildren;
  empty?: string;
}) {
  const rows = Array.isArray(props.children) ? props.children.flat() : props.children;
  const isEmpty = Array.isArray(rows) && rows.filter(Boolean).length === 0;
  return (
    <div class="table-wrap">
      <table>
        <caption>{props.caption}</caption>
        <thead>
          <tr>
            {props.head.map((name) => (
              <th scope="col" key={name}>
                {name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {isEmpty ? (
            <tr>
              <td colSpan={props.head.length} class="muted">
                {props.empty ?? 'Nothing yet.'}
              </td>
            </tr>
          ) : (
            rows
          )}
        </tbody>
      </table>
    </div>
  );
}

/** A screen's frame: its heading (focused when the screen opens, for keyboard and screen-reader users) and its parts. */
export function Screen(props: { title: string; intro?: ComponentChildren; children: ComponentChildren }) {
  return (
    <section class="screen" aria-labelledby="screen-title">
      <h1 id="screen-title" tabIndex={-1}>
        {props.title}
      </h1>
      {props.intro && <p class="intro">{props.intro}</p>}
      {props.children}
    </section>
  );
}

/** A text field with its label. */
export function Field(props: {
  label: string;
  name: string;
  value: string;
  onInput: (value: string) => void;
  type?: string;
  placeholder?: string;
  hint?: string;
  required?: boolean;
  autoComplete?: string;
}) {
  const id = `field-${props.name}`;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        name={props.name}
        type={props.type ?? 'text'}
        value={props.value}
        placeholder={props.placeholder}
        required={props.required}
        autoComplete={props.autoComplete ?? 'off'}
        spellcheck={false}
        aria-describedby={props.hint ? `${id}-hint` : undefined}
        onInput={(event) => props.onInput((event.target as HTMLInputElement).value)}
      />
      {props.hint && (
        <span id={`${id}-hint`} class="hint">
          {props.hint}
        </span>
      )}
    </div>
  );
}

/** A drop-down with its label. */
export function Choice(props: {
  label: string;
  name: string;
  value: string;
  options: readonly (string | { value: string; label: string })[];
  onChange: (value: string) => void;
}) {
  const id = `field-${props.name}`;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <select
        id={id}
        name={props.name}
        value={props.value}
        onChange={(event) => props.onChange((event.target as HTMLSelectElement).value)}
      >
        {props.options.map((option) => {
          const { value, label } = typeof option === 'string' ? { value: option, label: option } : option;
          return (
            <option key={value} value={value}>
              {label}
            </option>
          );
        })}
      </select>
    </div>
  );
}
