/**
 * The pages of `GET /v1/shipments` as last answered, each kept while nothing of its account has been
 * written since (the store counts every write, `ShipmentStore.changesOf`): a client or a dashboard
 * that polls the same page gets the same bytes without the rows being read again. A page costs a read
 * of its rows, its count and its cursor's MAC; measured in the running server, a page of twenty read
 * again cost two and a half times a read of one shipment, from here about as much. At most
 * `CHARACTERS_KEPT` characters of pages are kept, the oldest making way.
 *
 * A page is kept once it has been asked for twice (`offer`): a client walking a list with the cursor
 * asks for each page once, and keeping each of them (a walk through 100,000 shipments is 60 MB of
 * pages) filled V8's old generation with pages kept a moment and then dropped, 40 to 60 MiB of it
 * resident after the walk. Only the keys of pages asked for once are noted, at most `KEYS_NOTED`.
 */
export class PageCache {
  private readonly pages = new Map<string, { changes: number; text: string }>();
  private characters = 0;
  private readonly askedOnce = new Set<string>();

  constructor(private readonly charactersKept = CHARACTERS_KEPT) {}

  /** The page as answered, if nothing of the account has been written since. */
  get(key: string, changes: number): string | undefined {
    const page = this.pages.get(key);
    return page?.changes === changes ? page.text : undefined;
  }

  /** Keeps the page if it was offered before: see the class's comment. */
  offer(key: string, changes: number, text: string): void {
    if (this.askedOnce.delete(key) || this.pages.has(key)) {
      this.set(key, changes, text);
      return;
    }
    if (this.askedOnce.size >= KEYS_NOTED) this.askedOnce.clear();
    this.askedOnce.add(key);
  }

  set(key: string, changes: number, text: string): void {
    this.drop(key);
    if (text.length > this.charactersKept) return;
    while (this.characters + text.length > this.charactersKept) {
      this.drop(this.pages.keys().next().value as string);
    }
    this.pages.set(key, { changes, text });
    this.characters += text.length;
  }

  /** Forgets every page whose key starts with `prefix` (an account's, at its reset). */
  forget(prefix: string): void {
    for (const key of this.pages.keys()) if (key.startsWith(prefix)) this.drop(key);
    for (const key of this.askedOnce) if (key.startsWith(prefix)) this.askedOnce.delete(key);
  }

  /** Whether any page or note kept has a key that starts with `prefix`. */
  keeps(prefix: string): boolean {
    for (const key of this.pages.keys()) if (key.startsWith(prefix)) return true;
    for (const key of this.askedOnce) if (key.startsWith(prefix)) return true;
    return false;
  }

  private drop(key: string): void {
    const page = this.pages.get(key);
    if (!page) return;
    this.pages.delete(key);
    this.characters -= page.text.length;
  }
}

/** 4 Mi characters: a few hundred pages of twenty, a few dozen of a hundred. */
const CHARACTERS_KEPT = 4 * 1024 * 1024;

/** Keys of pages asked for once (about a hundred characters each), forgotten all at once past this. */
const KEYS_NOTED = 10_000;
