import fc from 'fast-check';

/**
 * Values that careless and hostile callers send: the fuzzer puts them in path segments, query
 * strings, JSON fields and whole bodies. None of them is an http(s) URL (see safety.ts: nothing the
 * fuzzer sends may make the sandbox call out).
 */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  '0',
  '-1',
  'null',
  'undefined',
  'true',
  'NaN',
  'Infinity',
  '1e309',
  '9223372036854775808',
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  '.',
  '..',
  '../../../etc/passwd',
  '..%2f..%2fetc%2fpasswd',
  '%',
  '%zz',
  '%00',
  '%E0%A4%A',
  '%2e%2e',
  "' OR '1'='1",
  '"; DROP TABLE shipments; --',
  '1; SELECT * FROM api_keys',
  '<script>alert(1)</script>',
  '{{7*7}}',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template injection, sent as it is
  '${7*7}',
  '\u0000',
  '\u0000shp_',
  'a\u0000b',
  '\t\n\r',
  '\u202e\u0645\u0631\u062d\u0628\u0627',
  '𝕊𝕙𝕚𝕡',
  '👩‍👩‍👧‍👦📦',
  'Zalgo z̸̢̛͓a̵̧̦l̶̨̬g̴̰̕o̸̗̓',
  '\ud800',
  '\udfff\ud800',
  'İıſK',
  'ß'.repeat(50),
  'shp_',
  'lbl_',
  'shp_00000000000000000000000000',
  'shp_ZZZZZZZZZZZZZZZZZZZZZZZZZZ',
  'SHP_01JD3S5Z7QK2N8W4X6Y9A0B1C2',
  'svc_test_',
  'svc_live_0000000000000000',
  'javascript:alert(1)',
  'file:///etc/passwd',
  'mailto:someone',
  '/v1/shipments',
  '*',
  '?',
  '#',
  '&',
  '=',
  '[]',
  '{}',
  '{"a":1}',
  'x'.repeat(300),
  'x'.repeat(5_000),
];

/** Numbers at and past every edge: JSON's, JavaScript's, SQLite's 64-bit integers and the document's. */
export const EXTREME_NUMBERS: readonly number[] = [
  0,
  -0,
  -1,
  0.5,
  1.5,
  -0.000001,
  1e-300,
  1e300,
  -1e300,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  2 ** 31,
  2 ** 32,
  2 ** 53,
  2 ** 53 + 2,
  2 ** 63,
  -(2 ** 63),
  2 ** 64,
  86_401,
  70_001,
  301,
  1_000_001,
  315_360_001,
  99_999_999_999,
];

/**
 * Number literals that JSON allows (or nearly) but that come out of `JSON.parse` changed: beyond a
 * double, past 64 bits, negative zero, exponents. Spliced into the body's text as they are.
 */
export const RAW_NUMBER_LITERALS: readonly string[] = [
  '1e400',
  '-1e400',
  '9223372036854775807',
  '9223372036854775808',
  '-9223372036854775809',
  '18446744073709551616',
  '123456789012345678901234567890',
  '-0',
  '1.0',
  '1E2',
  '0.1e1',
  '1e-400',
  '0.30000000000000004',
];

/** Text that is not JSON, or not the JSON object a body must be. */
export const BROKEN_BODIES: readonly string[] = [
  '{',
  '}',
  '{"a":}',
  '{,}',
  '{"a":1,}',
  "{'a':1}",
  '{a:1}',
  '{"a":NaN}',
  '{"a":Infinity}',
  '{"a":undefined}',
  '{"a":1} // comment',
  '{"a":1}{"b":2}',
  '{"a":"\u0001"}',
  '\ufeff{}',
  'null',
  'true',
  '42',
  '"text"',
  '[]',
  '[{}]',
  'undefined',
  '\u0000',
  '\u0000{}',
  'a=1&b=2',
  '<xml/>',
  `${'['.repeat(5_000)}${']'.repeat(5_000)}`,
  `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`,
];

/** Content types a JSON body might be sent with; some are JSON (and must be taken), most are not. */
export const CONTENT_TYPES: readonly (string | null)[] = [
  null,
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=fuzz',
  'application/xml',
  'application/jsonx',
  'application/json-seq',
  'application/vnd.api+json',
  'APPLICATION/JSON',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/json;;;',
  '*/*',
  '',
];

/** Property names that a careless parser would treat specially. */
export const HOSTILE_KEYS: readonly string[] = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'extra',
  '',
  ' ',
  'id',
  'account_id',
  '\u0000',
  '📦',
  'k'.repeat(1_000),
];

/** Arrays and objects nested far deeper than any schema goes. */
function deeplyNested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { a: value };
  return value;
}

/** A value of any JSON type that a field of a valid body is replaced by. */
export function garbageValue(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.constantFrom(...EXTREME_NUMBERS),
    fc.double(),
    fc.constantFrom(...HOSTILE_STRINGS),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.nat({ max: 200_000 }).map((n) => 'y'.repeat(n)),
    fc.constant([]),
    fc.constant({}),
    fc.jsonValue({ maxDepth: 4 }),
    fc.constantFrom(20, 200, 2_000).map(deeplyNested),
  );
}

/** A hostile value of a query parameter: wrong types, edges, huge and unusual text. */
export function hostileQueryValue(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(...HOSTILE_STRINGS),
    fc.constantFrom(...EXTREME_NUMBERS).map(String),
    fc.constantFrom(...RAW_NUMBER_LITERALS),
    fc.integer({ min: -10, max: 1_000 }).map(String),
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    fc.nat({ max: 20_000 }).map((n) => '9'.repeat(n)),
  );
}
