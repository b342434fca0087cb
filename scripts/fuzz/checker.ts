import {
  type ApiDocument,
  type DocumentedResponse,
  ERROR_SCHEMA_POINTER,
  type Operation,
} from './document.js';
import type { Answer } from './http.js';

/**
 * What can be wrong with an answer:
 * - `server_error`: any 5xx, documented or not (there must be none);
 * - `undocumented_status`: a status neither the operation nor the contract gives;
 * - `content_type`: not the media type the document gives for that status;
 * - `not_json`: a JSON answer whose body does not parse;
 * - `schema`: a JSON body that breaks the schema the document gives for that status;
 * - `cross_account`: a key of another account got a 2xx for this account's resource;
 * - `scope`: a key with `shipments:read` alone got a 2xx for a change;
 * - `no_answer`: the connection failed or timed out (counted by the fuzzer, not here).
 */
export type ProblemKind =
  | 'server_error'
  | 'undocumented_status'
  | 'content_type'
  | 'not_json'
  | 'schema'
  | 'cross_account'
  | 'scope'
  | 'no_answer';

export interface Problem {
  kind: ProblemKind;
  detail: string;
}

/**
 * A method a documented path lacks: `405 method_not_allowed` (with `Allow`), unless the request is
 * refused before routing (its key under /v1 and /_sandbox: 401; its body: 400), or a hostile id (`..`,
 * an empty segment) makes the path one that no route has (404).
 */
export const WRONG_METHOD_STATUSES: ReadonlySet<number> = new Set([400, 401, 404, 405]);

const ERROR_RESPONSE: DocumentedResponse = {
  mediaTypes: ['application/json'],
  jsonSchemaPointer: ERROR_SCHEMA_POINTER,
};

/**
 * The error codes of answers that never reach an operation, so that none lists them: the request
 * matched no route at all (a hostile id, empty or `..`, made its path another one), or Node's HTTP
 * parser refused it (a control character in the path). They are the contract's, judged by the whole
 * `Error` schema. Any other status that an operation does not list is undocumented: each operation
 * lists every status it answers, those of the key and the scope included.
 */
const BEFORE_ANY_OPERATION: ReadonlyMap<number, string> = new Map([
  [400, 'invalid_request'],
  [404, 'route_not_found'],
  [405, 'method_not_allowed'],
  [431, 'headers_too_large'],
]);

function neverReachedTheOperation(answer: Answer): boolean {
  const expected = BEFORE_ANY_OPERATION.get(answer.status);
  if (expected === undefined) return false;
  try {
    return (JSON.parse(answer.text) as { error?: { code?: unknown } }).error?.code === expected;
  } catch {
    return false;
  }
}

/** Checks one answer against what the document says the operation answers. */
export function checkAnswer(document: ApiDocument, operation: Operation, answer: Answer): Problem[] {
  if (answer.status >= 500)
    return [{ kind: 'server_error', detail: `${answer.status} ${excerpt(answer.text)}` }];

  const beforeAny = neverReachedTheOperation(answer);
  const documented =
    operation.documented && !beforeAny ? operation.responses.get(String(answer.status)) : undefined;
  const refusedAsWrongMethod = !operation.documented && WRONG_METHOD_STATUSES.has(answer.status);
  const expected = documented ?? (beforeAny || refusedAsWrongMethod ? ERROR_RESPONSE : undefined);
  if (!expected) {
    const listed = operation.documented ? [...operation.responses.keys()].join(', ') : 'none';
    return [
      {
        kind: 'undocumented_status',
        detail: `${answer.status} is not documented (documented: ${listed}); ${excerpt(answer.text)}`,
      },
    ];
  }
  return checkBody(document, expected, answer);
}

function checkBody(document: ApiDocument, expected: DocumentedResponse, answer: Answer): Problem[] {
  const contentType = answer.headers.get('content-type') ?? '';
  const mediaType = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (expected.mediaTypes.length === 0)
    return answer.text === ''
      ? []
      : [{ kind: 'content_type', detail: `a body where none is documented: ${excerpt(answer.text)}` }];
  if (!expected.mediaTypes.includes(mediaType))
    return [
      {
        kind: 'content_type',
        detail: `Content-Type ${JSON.stringify(contentType)}, documented: ${expected.mediaTypes.join(', ')}`,
      },
    ];
  if (mediaType !== 'application/json' || !expected.jsonSchemaPointer) return [];

  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return [{ kind: 'not_json', detail: `not JSON: ${excerpt(answer.text)}` }];
  }
  const errors = document.validate(expected.jsonSchemaPointer, body);
  if (!errors) return [];
  const described = errors
    .slice(0, 5)
    .map(
      (e) =>
        `${e.instancePath || '/'} ${e.message ?? e.keyword}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`,
    );
  return [{ kind: 'schema', detail: `${described.join('; ')} in ${excerpt(answer.text)}` }];
}

export function excerpt(text: string, length = 300): string {
  return text.length > length ? `${text.slice(0, length)}… (${text.length} characters)` : text;
}
