/**
 * Text and attribute values for the JUnit XML documents the command line and the report write: escaped,
 * and characters XML 1.0 cannot carry replaced (paths and answers are other programs' bytes).
 */

/** Characters outside XML 1.0's `Char` production (control characters, lone surrogates, U+FFFE/F). */
const NOT_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
const ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
};

export function xmlText(value: string): string {
  return value.replace(NOT_XML, '\uFFFD').replace(/[&<>"']/g, (char) => ENTITIES[char] as string);
}

/** An attribute's value: escaped as text, and its line breaks kept as references (not normalised away). */
export function xmlAttribute(value: string): string {
  return xmlText(value).replace(/\n/g, '&#10;').replace(/\r/g, '&#13;').replace(/\t/g, '&#9;');
}
