import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Api, ApiFailure, describeFailure } from './api.js';
import { Field, Status } from './components.js';
import { formatInstant } from './format.js';
import { type ClockView, type Session, SessionContext, usePoll } from './live.js';
import { NAVIGATION, parseRoute, type Route, sectionOf } from './routes.js';
import { ClockScreen } from './screens/clock.js';
import { FaultsScreen } from './screens/faults.js';
import { KeysScreen } from './screens/keys.js';
import { OutboxScreen } from './screens/outbox.js';
import { ReportScreen } from './screens/report.js';
import { RequestsScreen } from './screens/requests.js';
import { ShipmentScreen } from './screens/shipment.js';
import { ShipmentsScreen } from './screens/shipments.js';
import { WebhooksScreen } from './screens/webhooks.js';
import { forgetKey, type KeyStore, keepKey, keyFromFragment, looksLikeKey, startingKey } from './session.js';
import type { Account } from './types.js';

/** Takes the key out of the address (and so out of the history and any bookmark). */
function replaceFragment(rest: string): void {
  window.history.replaceState(null, '', `${window.location.pathname}${window.location.search}${rest}`);
}

/** The sandbox's address as this page sees it: the folder of `/dashboard`. */
const BASE = new URL('.', window.location.href).href;

export function App(props: { store: KeyStore }) {
  const { store } = props;
  const [key, setKey] = useState<string | undefined>(() =>
    startingKey(window.location, store, replaceFragment),
  );
  const [notice, setNotice] = useState<string | undefined>(undefined);

  const signIn = useCallback(
    (value: string) => {
      keepKey(store, value);
      setNotice(undefined);
      setKey(value);
    },
    [store],
  );
  // A link with a key followed in a tab that already shows the dashboard changes only the fragment.
  useEffect(() => {
    const follow = () => {
      const fromFragment = keyFromFragment(window.location.hash);
      if (fromFragment.key === undefined) return;
      replaceFragment(fromFragment.rest);
      signIn(fromFragment.key);
    };
    window.addEventListener('hashchange', follow);
    return () => window.removeEventListener('hashchange', follow);
  }, [signIn]);
  const signOut = useCallback(
    (why?: string) => {
      forgetKey(store);
      setNotice(why);
      setKey(undefined);
    },
    [store],
  );

  if (key === undefined) return <SignIn onSignIn={signIn} notice={notice} />;
  return <SignedIn key={key} apiKey={key} onSignOut={signOut} />;
}

function SignIn(props: { onSignIn: (key: string) => void; notice: string | undefined }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const field = useRef<HTMLDivElement>(null);
  useEffect(() => field.current?.querySelector('input')?.focus(), []);

  const submit = async (event: Event) => {
    event.preventDefault();
    const key = value.trim();
    if (!looksLikeKey(key)) {
      setError('A sandbox key starts with svc_test_.');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      // Any answer but 401 means the key is one of the sandbox's: a key without shipments:read may
      // still sign in, and each screen says what it lacks.
      await new Api(BASE, key).get('/_sandbox/account').catch((failure: unknown) => {
        if (!(failure instanceof ApiFailure) || failure.keyRefused) throw failure;
      });
      props.onSignIn(key);
    } catch (failure) {
      setError(`This key does not sign in: ${describeFailure(failure)}`);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <h1>Shipping Sandbox</h1>
      <p>
        The dashboard acts as one account: sign in with that account's test key. It acts with that key, so it
        can do nothing the key cannot; and it goes through the sandbox's own routes, so nothing it does counts
        as your client's requests.
      </p>
      {props.notice && (
        <p class="notice" role="status">
          {props.notice}
        </p>
      )}
      <form onSubmit={submit} aria-label="Sign in">
        <div ref={field}>
          <Field
            label="API key"
            name="key"
            type="password"
            value={value}
            onInput={setValue}
            placeholder="svc_test_…"
            hint="The sandbox prints a ready link for its default account at start; POST /_sandbox/accounts makes a new account with its own key."
            required
          />
        </div>
        <button type="submit" class="button primary" disabled={busy} aria-busy={busy}>
          Sign in
        </button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
      <p>
        <a href="docs">Open the API reference</a>
      </p>
    </main>
  );
}

function SignedIn(props: { apiKey: string; onSignOut: (why?: string) => void }) {
  const { onSignOut } = props;
  const api = useMemo(
    () =>
      new Api(BASE, props.apiKey, (failure) =>
        onSignOut(`Signed out: the sandbox no longer takes this key (${failure.message})`),
      ),
    [props.apiKey, onSignOut],
  );
  const clock = usePoll(() => api.get<ClockView>('/_sandbox/clock'), [api]);
  // The account's name and plan: read once, they hardly change.
  const account = usePoll(() => api.get<Account>('/_sandbox/account'), [api], { everyMs: Infinity });
  const route = useRoute();

  const session: Session = useMemo(
    () => ({ api, clock: clock.data, refreshClock: clock.refresh }),
    [api, clock.data, clock.refresh],
  );

  return (
    <SessionContext.Provider value={session}>
      <a class="skip" href="#main">
        Skip to the screen
      </a>
      <header class="top">
        <div class="brand">
          <span class="name">Shipping Sandbox</span>
          <span class="account">
            {account.data ? `${account.data.name} · ${account.data.plan}` : 'Account'}
            <span class="muted"> {account.data?.id ?? ''}</span>
          </span>
        </div>
        <p class="clock-summary" aria-live="off">
          <span class="label">Account clock</span>{' '}
          {clock.data ? (
            <>
              <time dateTime={clock.data.now}>{formatInstant(clock.data.now)}</time>{' '}
              {clock.data.frozen ? <Status value="frozen" /> : <span class="muted">×{clock.data.speed}</span>}
            </>
          ) : (
            <span class="muted">…</span>
          )}
        </p>
        <div class="session-actions">
          <a href="docs">API reference</a>
          <button type="button" class="button plain" onClick={() => onSignOut('Signed out.')}>
            Sign out
          </button>
        </div>
      </header>
      <nav class="sections" aria-label="Screens">
        <ul>
          {NAVIGATION.map((entry) => (
            <li key={entry.screen}>
              <a href={entry.href} aria-current={sectionOf(route) === entry.screen ? 'page' : undefined}>
                {entry.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        <CurrentScreen route={route} />
      </main>
    </SessionContext.Provider>
  );
}

function CurrentScreen(props: { route: Route }) {
  const { route } = props;
  switch (route.screen) {
    case 'shipments':
      return <ShipmentsScreen />;
    case 'shipment':
      return <ShipmentScreen key={route.id} id={route.id} />;
    case 'clock':
      return <ClockScreen />;
    case 'webhooks':
      return <WebhooksScreen selected={route.id} delivery={route.delivery} />;
    case 'outbox':
      return <OutboxScreen />;
    case 'keys':
      return <KeysScreen />;
    case 'faults':
      return <FaultsScreen />;
    case 'requests':
      return <RequestsScreen selected={route.id} />;
    case 'report':
      return <ReportScreen />;
  }
}

/**
 * The screen the fragment names, followed as it changes. On a change the new screen's heading takes
 * the focus, so keyboard and screen-reader users start at the top of what they opened.
 */
function useRoute(): Route {
  const [route, setRoute] = useState<Route>(() => parseRoute(window.location.hash));
  const changed = useRef(false);
  useEffect(() => {
    const follow = () => {
      changed.current = true;
      setRoute(parseRoute(window.location.hash));
    };
    window.addEventListener('hashchange', follow);
    return () => window.removeEventListener('hashchange', follow);
  }, []);
  // After each change of screen.
  useEffect(() => {
    if (changed.current) document.getElementById('screen-title')?.focus();
  }, [route]);
  return route;
}
