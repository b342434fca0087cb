import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';

/** A JSON Schema (2020-12, as OpenAPI 3.1 writes it), read loosely: the fuzzer only needs its keywords. */
export type JsonSchema = { [keyword: string]: unknown };

export interface Parameter {
  name: string;
  in: 'path' | 'query';
  required: boolean;
  schema: JsonSchema;
}

export interface DocumentedResponse {
  /**
   * Media types the document gives for this status (empty: no body), without their parameters, as an
   * answer's Content-Type is compared: `text/plain; version=0.0.4` (GET /metrics) is `text/plain`.
   */
  mediaTypes: string[];
  /** The JSON Pointer of the `application/json` schema, when there is one. */
  jsonSchemaPointer?: string;
}

export interface Operation {
  /** `POST /v1/shipments`, as the summary and the known findings name it. */
  key: string;
  method: string;
  /** The path template as the server sees it, its server's path first: `/v1/shipments/{id}`. */
  path: string;
  /** The template as the document writes it, relative to its server: `/shipments/{id}`. */
  documentPath: string;
  pathParams: Parameter[];
  queryParams: Parameter[];
  /** The request body's schema, when the operation takes one. */
  body?: JsonSchema;
  /** By status, as the document lists them (`'201'`, `'422'`). */
  responses: ReadonlyMap<string, DocumentedResponse>;
  /** Whether the document asks for a key (`security`). */
  authenticated: boolean;
  /**
   * False for the methods a documented path does not have (`PUT /v1/shipments`): the fuzzer sends
   * those too, and they may only be refused.
   */
  documented: boolean;
}

/** The JSON Pointer of the document's `Error` component: every error answer is checked against it. */
export const ERROR_SCHEMA_POINTER = '#/components/schemas/Error';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const DOCUMENT_ID = 'sandbox:openapi.json';

/** `~` and `/` escaped for a JSON Pointer segment (RFC 6901). */
const pointerSegment = (text: string) => text.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * The sandbox's OpenAPI document: its operations, and a validator for any schema in it. The whole
 * document is registered with Ajv under one id, so `#/components/schemas/...` references resolve
 * wherever they are, and a response schema is validated in place, by its JSON Pointer.
 */
export class ApiDocument {
  private readonly ajv: Ajv2020;
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(readonly raw: JsonSchema) {
    // Not strict: the document carries OpenAPI's own words (`example`, `openapi`, `paths`) beside
    // the schemas, which Ajv would otherwise refuse as unknown keywords.
    this.ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
    formats.default(this.ajv);
    // The contract narrows RFC 3339 to one form: UTC, whole seconds, `Z` (never milliseconds, never
    // an offset). Checking the narrower form makes a timestamp in any other form a schema break.
    this.ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    this.ajv.addSchema({ ...raw, $id: DOCUMENT_ID });
  }

  /** Every operation of the document, then every method its paths lack. */
  operations(): Operation[] {
    const paths = (this.raw.paths ?? {}) as Record<string, Record<string, JsonSchema>>;
    const documented: Operation[] = [];
    const undocumented: Operation[] = [];
    for (const [documentPath, item] of Object.entries(paths)) {
      const path = `${this.serverPathOf(item)}${documentPath}`;
      for (const method of METHODS) {
        const operation = item[method];
        if (operation) documented.push(this.operation(path, documentPath, method, operation));
        else
          undocumented.push({
            key: `${method.toUpperCase()} ${path}`,
            method: method.toUpperCase(),
            path,
            documentPath,
            pathParams: this.pathParamsOf(path, []),
            queryParams: [],
            responses: new Map(),
            authenticated: path.startsWith('/v1') || path.startsWith('/_sandbox'),
            documented: false,
          });
      }
    }
    return [...documented, ...undocumented];
  }

  /** The schema a `$ref` points to (`#/components/schemas/Address`). */
  resolve(ref: string): JsonSchema {
    if (!ref.startsWith('#/')) throw new Error(`only local references are followed, not ${ref}`);
    let node: unknown = this.raw;
    for (const segment of ref.slice(2).split('/')) {
      const key = segment.replaceAll('~1', '/').replaceAll('~0', '~');
      node = (node as Record<string, unknown> | undefined)?.[key];
    }
    if (node === undefined || node === null || typeof node !== 'object')
      throw new Error(`${ref} is not in the document`);
    return node as JsonSchema;
  }

  /** Validates a value against the schema at a JSON Pointer of the document; null when it conforms. */
  validate(pointer: string, value: unknown): ErrorObject[] | null {
    let validator = this.validators.get(pointer);
    if (!validator) {
      validator = this.ajv.compile({ $ref: `${DOCUMENT_ID}${pointer}` });
      this.validators.set(pointer, validator);
    }
    return validator(value) ? null : [...(validator.errors ?? [])];
  }

  /**
   * The path of the server a path item is relative to (`/v1`, or `` for the bare origin): its own
   * `servers`, or the document's. Only the path counts: requests go to the origin the fuzzer was given.
   */
  private serverPathOf(item: JsonSchema): string {
    const servers = (item.servers ?? this.raw.servers ?? []) as { url?: string }[];
    const url = servers[0]?.url ?? '/';
    return new URL(url, 'http://sandbox.invalid').pathname.replace(/\/+$/, '');
  }

  private operation(path: string, documentPath: string, method: string, operation: JsonSchema): Operation {
    const parameters = ((operation.parameters ?? []) as JsonSchema[]).map(
      (p): Parameter => ({
        name: String(p.name),
        in: p.in === 'path' ? 'path' : 'query',
        required: p.required === true,
        schema: (p.schema ?? {}) as JsonSchema,
      }),
    );
    const requestBody = operation.requestBody as
      | { content?: Record<string, { schema?: JsonSchema }> }
      | undefined;
    const body = requestBody?.content?.['application/json']?.schema;

    const responses = new Map<string, DocumentedResponse>();
    const base = `#/paths/${pointerSegment(documentPath)}/${method}/responses`;
    for (const [status, response] of Object.entries(
      (operation.responses ?? {}) as Record<string, JsonSchema>,
    )) {
      const content = (response.content ?? {}) as Record<string, JsonSchema>;
      const mediaTypes = Object.keys(content).map((type) => type.split(';')[0]?.trim().toLowerCase() ?? '');
      responses.set(status, {
        mediaTypes,
        ...(content['application/json']
          ? { jsonSchemaPointer: `${base}/${pointerSegment(status)}/content/application~1json/schema` }
          : {}),
      });
    }

    return {
      key: `${method.toUpperCase()} ${path}`,
      method: method.toUpperCase(),
      path,
      documentPath,
      pathParams: this.pathParamsOf(
        path,
        parameters.filter((p) => p.in === 'path'),
      ),
      queryParams: parameters.filter((p) => p.in === 'query'),
      ...(body ? { body } : {}),
      responses,
      authenticated: Array.isArray(operation.security) && operation.security.length > 0,
      documented: true,
    };
  }

  /** The template's parameters in order; one the document forgot to declare is a plain string. */
  private pathParamsOf(path: string, declared: Parameter[]): Parameter[] {
    return [...path.matchAll(/\{([^}]+)\}/g)].map(
      ([, name]) =>
        declared.find((p) => p.name === name) ?? {
          name: String(name),
          in: 'path',
          required: true,
          schema: { type: 'string' },
        },
    );
  }
}
