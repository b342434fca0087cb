import { createContext } from 'preact';
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import type { Api } from './api.js';
import { Poller } from './poller.js';

/** What a screen polls: the latest answer, the latest failure (cleared by the next success), and a way to read again now. */
export interface Live<T> {
  data: T | undefined;
  error: unknown;
  loaded: boolean;
  refresh: () => Promise<void>;
}

/**
 * Keeps `load`'s answer current while the screen shows (see poller.ts); `deps` start it afresh.
 * `everyMs: Infinity` reads once, and again only when asked (for what changes only when this page
 * changes it).
 */
export function usePoll<T>(
  load: () => Promise<T>,
  deps: readonly unknown[],
  options: { everyMs?: number } = {},
): Live<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loaded: boolean }>({
    data: undefined,
    error: undefined,
    loaded: false,
  });
  const poller = useRef<Poller<T> | undefined>(undefined);

  // `deps` are the caller's: they name what `load` depends on.
  useEffect(() => {
    // What was shown stays until the new read answers (a search being typed does not flicker).
    setState((previous) => ({ ...previous, loaded: false }));
    const current = new Poller<T>({
      load,
      onResult: (result) =>
        setState((previous) =>
          'data' in result
            ? { data: result.data, error: undefined, loaded: true }
            : { data: previous.data, error: result.error, loaded: true },
        ),
      isHidden: () => document.hidden,
      everyMs: options.everyMs,
    });
    const onVisibility = () => {
      if (!document.hidden) current.visible();
    };
    document.addEventListener('visibilitychange', onVisibility);
    poller.current = current;
    current.start();
    return () => {
      current.stop();
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, deps);

  return { ...state, refresh: () => poller.current?.refresh() ?? Promise.resolve() };
}

/** The account's clock as the header last read it. */
export interface ClockView {
  now: string;
  speed: number;
  frozen: boolean;
}

/** What every screen shares: the signed-in client, and the account clock's latest reading. */
export interface Session {
  api: Api;
  clock: ClockView | undefined;
  /** Reads the clock again now (after an advance, say). */
  refreshClock: () => Promise<void>;
}

export const SessionContext = createContext<Session | undefined>(undefined);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('no session: a screen was drawn outside the signed-in app');
  return session;
}
