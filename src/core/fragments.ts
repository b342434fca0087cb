/**
 * Packs JSON text by replacing fixed fragments (its keys, their punctuation, fixed vocabulary) with
 * control characters, and puts them back. Lossless by construction: `JSON.stringify` never writes a
 * raw control character (it escapes them), so in packed JSON every control character is a code, and
 * unpacking restores exactly the fragment it replaced. A table of fragments is a format: once text has
 * been stored packed with one, the table never changes (a new table is a new format).
 *
 * The first 30 fragments get one character (U+0001 to U+001E), the next ones two (U+001F, then a
 * character from `!`). Packing is one pass of a regular expression; unpacking one pass over the
 * characters, several times faster than a regular expression calling back for each code, since reads
 * unpack (every row of a list) where only writes pack.
 */
export class FragmentCodec {
  private readonly find: RegExp;
  private readonly codeOf: Map<string, string>;
  /** The fragment of each one-character code, and of each second character after U+001F. */
  private readonly single: string[] = [];
  private readonly double: string[] = [];

  /**
   * `secondFrom`: the first second character of the two-character codes (`!` unless a table that has
   * shipped started elsewhere: the events' first table starts at `A`).
   */
  constructor(
    fragments: readonly string[],
    private readonly secondFrom = 0x21,
  ) {
    if (fragments.length > 30 + 0x7f - secondFrom)
      throw new Error(`A fragment table holds at most ${30 + 0x7f - secondFrom} fragments.`);
    const codeOf = (index: number) =>
      index < 30 ? String.fromCharCode(index + 1) : `\x1f${String.fromCharCode(secondFrom + index - 30)}`;
    this.codeOf = new Map(fragments.map((fragment, index) => [fragment, codeOf(index)]));
    fragments.forEach((fragment, index) => {
      if (index < 30) this.single[index + 1] = fragment;
      else this.double[index - 30] = fragment;
    });
    // Longest first, so that where fragments overlap the longer one is taken.
    this.find = new RegExp(
      [...fragments]
        .sort((a, b) => b.length - a.length)
        .map((fragment) => fragment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('|'),
      'g',
    );
  }

  /** The text packed, or undefined when it holds a control character (JSON never does) and cannot be. */
  pack(text: string): string | undefined {
    if (CONTROL.test(text)) return undefined;
    return text.replace(this.find, (fragment) => this.codeOf.get(fragment) as string);
  }

  /** The packed text as it was; throws on a code that no fragment has (text this codec never packed). */
  unpack(packed: string, from = 0): string {
    let text = '';
    let start = from;
    const end = packed.length;
    for (let i = from; i < end; i++) {
      const code = packed.charCodeAt(i);
      if (code >= 0x20) continue;
      let fragment: string | undefined;
      if (code === 0x1f) {
        fragment = this.double[packed.charCodeAt(i + 1) - this.secondFrom];
        text += packed.slice(start, i) + this.known(fragment);
        i++;
      } else {
        fragment = this.single[code];
        text += packed.slice(start, i) + this.known(fragment);
      }
      start = i + 1;
    }
    return start === from ? packed.slice(from) : text + packed.slice(start);
  }

  private known(fragment: string | undefined): string {
    if (fragment === undefined) throw new Error('Packed text holds a code that no fragment has.');
    return fragment;
  }
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: text holding them cannot be packed
const CONTROL = /[\x00-\x1f]/;
