import type { ApiDescription } from './document.js';
import { describeJson, quote, type Shape } from './shape.js';
import type { ConformanceDifference } from './types.js';

/** One side's answer to a call. */
export interface Answer {
  /** The status, or null when no answer came (then `failure` says why). */
  status: number | null;
  failure?: string;
  headers: Headers;
  bytes: Uint8Array;
  /** The body parsed as JSON, when it is JSON. */
  json?: unknown;
}

/** The headers the specification says every answer carries; their presence is compared, not their values. */
export const RATE_LIMIT_HEADERS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
] as const;

export const ABSENT = '(absent)';

/**
 * How the target's answer differs from the sandbox's: the status; for errors the `code` and `field`;
 * the media type of `Content-Type`; the presence of each rate-limit header; and the shape of the body,
 * read with the schema the document gives the sandbox's answer. Values that must differ between two
 * deployments (ids, times, tracking numbers, amounts, messages) are never compared.
 */
export function compareAnswers(
  sandbox: Answer,
  target: Answer,
  operation: string,
  api: ApiDescription,
): ConformanceDifference[] {
  if (sandbox.status === null || target.status === null) {
    const said = (answer: Answer) => answer.status ?? `no answer (${answer.failure ?? 'unknown error'})`;
    return said(sandbox) === said(target)
      ? []
      : [{ path: 'status', expected: said(sandbox), actual: said(target) }];
  }
  const differences: ConformanceDifference[] = [];
  const differ = (path: string, expected: string | number, actual: string | number) => {
    if (expected !== actual) differences.push({ path, expected, actual });
  };
  differ('status', sandbox.status, target.status);
  differ('header:content-type', mediaType(sandbox), mediaType(target));
  for (const name of RATE_LIMIT_HEADERS)
    differ(`header:${name}`, presence(sandbox, name), presence(target, name));

  if (isError(sandbox) !== isError(target)) {
    // One succeeded and the other refused: their bodies have nothing in common but the error's code.
    differ('body.error.code', errorPart(sandbox, 'code'), errorPart(target, 'code'));
    differ('body.error.field', errorPart(sandbox, 'field'), errorPart(target, 'field'));
    return differences;
  }
  const schema = api.answerSchema(operation, sandbox.status);
  const shapeOf = (answer: Answer): Shape =>
    answer.json === undefined
      ? { paths: new Map([['body', new Set([fileKind(answer.bytes)])]]), emptyArrays: new Set() }
      : describeJson(answer.json, schema, api);
  differences.push(...compareShapes(shapeOf(sandbox), shapeOf(target)));
  return differences;
}

/**
 * The paths whose descriptions differ, in the order of the sandbox's body, then the target's. Below a
 * path that differs nothing more is said (a missing object's fields are missing too), nor below an
 * array that is empty on either side.
 */
export function compareShapes(expected: Shape, actual: Shape): ConformanceDifference[] {
  const differences: ConformanceDifference[] = [];
  const settled = [...expected.emptyArrays, ...actual.emptyArrays].map((path) => `${path}[]`);
  const paths = [...new Set([...expected.paths.keys(), ...actual.paths.keys()])];
  for (const path of paths) {
    if (settled.some((above) => path === above || isBelow(path, above))) continue;
    const wanted = described(expected.paths.get(path));
    const got = described(actual.paths.get(path));
    if (wanted === got) continue;
    differences.push({ path, expected: wanted, actual: got });
    settled.push(path);
  }
  return differences;
}

function isBelow(path: string, above: string): boolean {
  return path.startsWith(`${above}.`) || path.startsWith(`${above}[`);
}

function described(descriptions: Set<string> | undefined): string {
  return descriptions === undefined ? ABSENT : [...descriptions].sort().join(' | ');
}

function isError(answer: Answer): boolean {
  return (answer.status ?? 0) >= 400;
}

function errorPart(answer: Answer, part: 'code' | 'field'): string {
  const error = (answer.json as { error?: Record<string, unknown> } | undefined)?.error;
  const value = error !== null && typeof error === 'object' ? error[part] : undefined;
  return value === undefined ? ABSENT : quote(value);
}

/** `application/json` of `application/json; charset=utf-8`: the parameters are no part of the shape. */
function mediaType(answer: Answer): string {
  const type = answer.headers.get('content-type');
  return type === null ? ABSENT : (type.split(';')[0] ?? '').trim().toLowerCase();
}

function presence(answer: Answer, header: string): string {
  return answer.headers.has(header) ? 'present' : ABSENT;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** What a body that is not JSON is: one of the label files, or something else. */
export function fileKind(bytes: Uint8Array): string {
  if (bytes.length === 0) return 'empty';
  const start = new TextDecoder().decode(bytes.subarray(0, 16));
  if (start.startsWith('%PDF-')) return 'PDF document';
  if (PNG_SIGNATURE.every((byte, index) => bytes[index] === byte)) return 'PNG image';
  if (start.trimStart().startsWith('^XA')) return 'ZPL label';
  return 'neither JSON nor a PDF, PNG or ZPL file';
}
