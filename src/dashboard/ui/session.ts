/**
 * Which key the dashboard (and the API reference's "Try it out") signs in with. A key arrives typed
 * in, or in the URL's fragment (`/dashboard#key=svc_test_…`, which browsers never send to a server);
 * it is kept in the tab's session storage, so it goes when the tab closes, and never in a URL.
 */

/** The session storage entry both pages read. */
export const KEY_ENTRY = 'shipping-sandbox.key';

/** Only a test key's shape is accepted: the sandbox takes nothing else. */
const KEY_SHAPE = /^svc_test_[A-Za-z0-9_-]{8,200}$/;

export function looksLikeKey(value: string): boolean {
  return KEY_SHAPE.test(value);
}

/**
 * The key in a fragment such as `#key=svc_test_…`, and the fragment left once it is taken out (the
 * key must not stay in the address bar, the history or a bookmark). Fragments that carry other
 * parameters keep them.
 */
export function keyFromFragment(hash: string): { key: string | undefined; rest: string } {
  const fragment = hash.startsWith('#') ? hash.slice(1) : hash;
  if (!fragment.includes('key=')) return { key: undefined, rest: hash };
  const params = new URLSearchParams(fragment);
  const key = params.get('key')?.trim() || undefined;
  params.delete('key');
  const rest = params.toString();
  return { key, rest: rest === '' ? '' : `#${rest}` };
}

/** Session storage, or whatever stands in for it (tests, a browser that refuses storage). */
export interface KeyStore {
  getItem(name: string): string | null;
  setItem(name: string, value: string): void;
  removeItem(name: string): void;
}

/**
 * The key to use as the page opens: one in the fragment wins over one kept from an earlier visit
 * (the contract), and is kept from now on. `replaceFragment` takes the key out of the address.
 */
export function startingKey(
  location: { hash: string },
  store: KeyStore,
  replaceFragment: (rest: string) => void,
): string | undefined {
  const { key, rest } = keyFromFragment(location.hash);
  if (key !== undefined) {
    replaceFragment(rest);
    store.setItem(KEY_ENTRY, key);
    return key;
  }
  return store.getItem(KEY_ENTRY) ?? undefined;
}

export function keepKey(store: KeyStore, key: string): void {
  store.setItem(KEY_ENTRY, key);
}

export function forgetKey(store: KeyStore): void {
  store.removeItem(KEY_ENTRY);
}

/** A store that keeps nothing beyond the page, for a browser that refuses session storage. */
export function memoryStore(): KeyStore {
  const entries = new Map<string, string>();
  return {
    getItem: (name) => entries.get(name) ?? null,
    setItem: (name, value) => void entries.set(name, value),
    removeItem: (name) => void entries.delete(name),
  };
}

/** The tab's session storage when the browser allows it. */
export function sessionStore(): KeyStore {
  try {
    const storage = window.sessionStorage;
    storage.getItem(KEY_ENTRY);
    return storage;
  } catch {
    return memoryStore();
  }
}
