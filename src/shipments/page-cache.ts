/**
 * The pages of `GET /v1/shipments` as last answered, each kept while nothing of its account has been
 * written since (the store counts every write, `ShipmentStore.changesOf`): a client or a dashboard
 * that polls the same page gets the same bytes without the rows being read again. A page costs a read
 * of its rows, its count and its cursor's MAC; measured in the running server, a page of twenty read
 * again cost two and a half times a read of one shipment, from here about as much. At most
 * `CHARACTERS_KEPT` characters of pages are kept, the oldest making way.
 */
export class PageCache {
  private readonly pages = new Map<string, { changes: number; text: string }>();
  private characters = 0;

  constructor(private readonly charactersKept = CHARACTERS_KEPT) {}

  /** The page as answered, if nothing of the account has been written since. */
  get(key: string, changes: number): string | undefined {
    const page = this.pages.get(key);
    return page?.changes === changes ? page.text : undefined;
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

  private drop(key: string): void {
    const page = this.pages.get(key);
    if (!page) return;
    this.pages.delete(key);
    this.characters -= page.text.length;
  }
}

/** 4 Mi characters: a few hundred pages of twenty, a few dozen of a hundred. */
const CHARACTERS_KEPT = 4 * 1024 * 1024;
