/**
 * A strict reader of the XML the sandbox writes (a declaration, elements, attributes, text and
 * character references; no comments, CDATA or DTD), for tests that check a document is well formed.
 * It throws on anything XML 1.0 does not allow there: an unescaped `<` or `&`, an unknown entity, a
 * character outside `Char`, a mismatched or unclosed tag, a repeated attribute, text around the root.
 */
export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  /** The element's own text, its references resolved (the children's text not included). */
  text: string;
}

const NAME = /[A-Za-z_:][\w.:-]*/y;
const SPACE = /[ \t\r\n]*/y;
const NOT_XML_CHAR = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

export function parseXml(source: string): XmlElement {
  if (NOT_XML_CHAR.test(source)) throw new Error('a character XML 1.0 does not allow');
  let at = 0;
  const fail = (what: string): never => {
    throw new Error(`${what} at offset ${at}: ${JSON.stringify(source.slice(at, at + 40))}`);
  };
  const skipSpace = () => {
    SPACE.lastIndex = at;
    SPACE.exec(source);
    at = SPACE.lastIndex;
  };
  const name = () => {
    NAME.lastIndex = at;
    const match = NAME.exec(source);
    if (!match) return fail('a name expected');
    at = NAME.lastIndex;
    return match[0];
  };
  const expect = (literal: string) => {
    if (!source.startsWith(literal, at)) fail(`'${literal}' expected`);
    at += literal.length;
  };
  /** Text up to `stop`, with its references resolved; a raw `<` (or, in an attribute, the quote) ends it. */
  const characters = (stops: string): string => {
    let out = '';
    while (at < source.length && !stops.includes(source[at] as string)) {
      const char = source[at] as string;
      if (char === '<') fail("a raw '<'");
      if (char !== '&') {
        out += char;
        at += 1;
        continue;
      }
      const end = source.indexOf(';', at);
      if (end === -1) fail("an '&' that starts no reference");
      const reference = source.slice(at + 1, end);
      let resolved: string | undefined;
      if (/^#[0-9]+$/.test(reference)) resolved = String.fromCodePoint(Number(reference.slice(1)));
      else if (/^#x[0-9a-fA-F]+$/.test(reference))
        resolved = String.fromCodePoint(Number.parseInt(reference.slice(2), 16));
      else resolved = ENTITIES[reference];
      if (resolved === undefined || NOT_XML_CHAR.test(resolved)) fail(`a bad reference '&${reference};'`);
      out += resolved;
      at = end + 1;
    }
    return out;
  };
  const element = (): XmlElement => {
    expect('<');
    const tag = name();
    const attributes: Record<string, string> = {};
    for (;;) {
      const before = at;
      skipSpace();
      if (source.startsWith('/>', at)) {
        at += 2;
        return { name: tag, attributes, children: [], text: '' };
      }
      if (source[at] === '>') {
        at += 1;
        break;
      }
      if (at === before) fail('a space before an attribute expected');
      const attribute = name();
      if (attribute in attributes) fail(`attribute '${attribute}' repeated`);
      skipSpace();
      expect('=');
      skipSpace();
      const quote = source[at];
      if (quote !== '"' && quote !== "'") fail('a quoted value expected');
      at += 1;
      attributes[attribute] = characters(quote as string);
      expect(quote as string);
    }
    const children: XmlElement[] = [];
    let text = '';
    for (;;) {
      text += characters('<');
      if (at >= source.length) fail(`<${tag}> is never closed`);
      if (source.startsWith('</', at)) {
        at += 2;
        if (name() !== tag) fail(`</${tag}> expected`);
        skipSpace();
        expect('>');
        return { name: tag, attributes, children, text };
      }
      children.push(element());
    }
  };

  if (source.startsWith('<?xml', at)) {
    const end = source.indexOf('?>', at);
    if (end === -1) fail('an unclosed declaration');
    at = end + 2;
  }
  skipSpace();
  const root = element();
  skipSpace();
  if (at !== source.length) fail('content after the root element');
  return root;
}

/** Every element below `root` (itself included) with this name, in document order. */
export function elementsNamed(root: XmlElement, name: string): XmlElement[] {
  return [
    ...(root.name === name ? [root] : []),
    ...root.children.flatMap((child) => elementsNamed(child, name)),
  ];
}
