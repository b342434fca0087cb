/**
 * The sandbox's OpenAPI document, as the conformance check reads it: the JSON Schema of an
 * operation's answer for a status, with `$ref` and `allOf` followed. The shapes compared come from
 * here (the same zod schemas that the sandbox validates and answers with), not from a copy.
 */

/** A JSON Schema (2020-12, as OpenAPI 3.1 writes it), read loosely: only the keywords used here. */
export type JsonSchema = { [keyword: string]: unknown };

export class ApiDescription {
  constructor(private readonly document: JsonSchema) {}

  /**
   * The schema of the JSON answer of `operation` (`GET /shipments/{id}`, a path as the document writes
   * it) for `status`, or undefined when the document gives none (a file, an undocumented status).
   */
  answerSchema(operation: string, status: number): JsonSchema | undefined {
    const [method = '', path = ''] = operation.split(' ');
    const paths = (this.document.paths ?? {}) as Record<string, Record<string, JsonSchema>>;
    const responses = paths[path]?.[method.toLowerCase()]?.responses as
      | Record<string, JsonSchema>
      | undefined;
    const response = responses?.[String(status)] ?? responses?.default;
    const content = response?.content as Record<string, { schema?: JsonSchema }> | undefined;
    return content?.['application/json']?.schema;
  }

  /** Whether the document has the operation. */
  has(operation: string): boolean {
    const [method = '', path = ''] = operation.split(' ');
    const paths = (this.document.paths ?? {}) as Record<string, Record<string, unknown>>;
    return paths[path]?.[method.toLowerCase()] !== undefined;
  }

  /**
   * The schemas that together describe a value (a `$ref` followed, an `allOf` spread out): a value
   * must satisfy every one of them.
   */
  flatten(schema: JsonSchema | undefined): JsonSchema[] {
    if (schema === undefined) return [];
    if (typeof schema.$ref === 'string') return this.flatten(this.resolve(schema.$ref));
    const parts = Array.isArray(schema.allOf)
      ? (schema.allOf as JsonSchema[]).flatMap((s) => this.flatten(s))
      : [];
    return [schema, ...parts];
  }

  private resolve(ref: string): JsonSchema | undefined {
    if (!ref.startsWith('#/')) return undefined;
    let node: unknown = this.document;
    for (const segment of ref.slice(2).split('/'))
      node = (node as Record<string, unknown> | undefined)?.[
        segment.replaceAll('~1', '/').replaceAll('~0', '~')
      ];
    return node !== null && typeof node === 'object' ? (node as JsonSchema) : undefined;
  }
}
