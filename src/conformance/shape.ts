import type { ApiDescription, JsonSchema } from './document.js';

/**
 * The shape of a JSON body: every path in it (`body.rate.amount`, `body.data[].status`) with what is
 * there, in words that leave out the values that must differ between two deployments. A string is
 * described by what the document says of it: the pattern of an id prefix, a timestamp or a decimal
 * amount (`string /^shp_[0-9A-Za-z_-]+$/`), one of its enum's names, or a plain `string`. Two shapes
 * are the same when every path is there on both sides and described alike.
 */
export interface Shape {
  /** Each path's description; an array's elements are merged under `[]`, hence a set. */
  paths: Map<string, Set<string>>;
  /** The arrays that were empty: whatever their elements look like on the other side is no difference. */
  emptyArrays: Set<string>;
}

/** The paths whose values are compared as they are: the error's `code` and `field`. */
const EXACT_PATHS: ReadonlySet<string> = new Set(['body.error.code', 'body.error.field']);

/** Between the description of a value that breaks its format and the value itself. */
export const EXAMPLE = ', e.g. ';

/** How a value is quoted in a description, cut short. */
export function quote(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}…"` : text;
}

export function describeJson(value: unknown, schema: JsonSchema | undefined, api: ApiDescription): Shape {
  const shape: Shape = { paths: new Map(), emptyArrays: new Set() };
  const note = (path: string, description: string) => {
    const seen = shape.paths.get(path);
    if (seen) seen.add(description);
    else shape.paths.set(path, new Set([description]));
  };

  const walk = (node: unknown, view: JsonSchema[], path: string, inArray: boolean) => {
    const schemas = chosen(view, node, api);
    note(path, describeValue(node, schemas, path, inArray));
    if (Array.isArray(node)) {
      if (node.length === 0) shape.emptyArrays.add(path);
      const items = schemas.flatMap((s) => api.flatten(s.items as JsonSchema | undefined));
      for (const item of node) walk(item, items, `${path}[]`, true);
    } else if (node !== null && typeof node === 'object') {
      for (const [key, child] of Object.entries(node)) {
        const property = schemas.flatMap((s) => {
          const properties = s.properties as Record<string, JsonSchema> | undefined;
          const own = properties?.[key];
          if (own) return api.flatten(own);
          return typeof s.additionalProperties === 'object'
            ? api.flatten(s.additionalProperties as JsonSchema)
            : [];
        });
        walk(child, property, `${path}${member(key)}`, inArray);
      }
    }
  };
  walk(value, api.flatten(schema), 'body', false);
  return shape;
}

/** `.key`, or `["odd key"]` for a key that is not a plain name. */
function member(key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Whether every `type` of the schemas admits the value (an integer is a number too). */
function admits(schemas: JsonSchema[], value: unknown): boolean {
  const type = jsonType(value);
  return schemas.every((s) => {
    if (s.type === undefined) return true;
    const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    return types.includes(type) || (type === 'integer' && types.includes('number'));
  });
}

/**
 * The schemas that describe this value: the view, and of each `anyOf`/`oneOf` the first branch that
 * admits it (its type, and the names of any enum among its properties, which is how the document's
 * unions tell their members apart).
 */
function chosen(view: JsonSchema[], value: unknown, api: ApiDescription): JsonSchema[] {
  const result: JsonSchema[] = [];
  for (const schema of view) {
    result.push(schema);
    const branches = [
      ...((schema.anyOf as JsonSchema[] | undefined) ?? []),
      ...((schema.oneOf as JsonSchema[] | undefined) ?? []),
    ];
    if (branches.length === 0) continue;
    const branch = branches
      .map((b) => api.flatten(b))
      .find((b) => admits(b, value) && enumsAdmit(b, value, api));
    if (branch) result.push(...chosen(branch, value, api));
  }
  return result;
}

function enumsAdmit(schemas: JsonSchema[], value: unknown, api: ApiDescription): boolean {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return true;
  return schemas.every((s) =>
    Object.entries((s.properties ?? {}) as Record<string, JsonSchema>).every(([key, property]) => {
      const names = namesOf(api.flatten(property));
      const own = (value as Record<string, unknown>)[key];
      return names === undefined || own === undefined || names.includes(own);
    }),
  );
}

/** The names an enum (or a `const`) allows, if the schemas have one. */
function namesOf(schemas: JsonSchema[]): unknown[] | undefined {
  for (const s of schemas) {
    if (Array.isArray(s.enum)) return s.enum as unknown[];
    if ('const' in s) return [s.const];
  }
  return undefined;
}

function describeValue(value: unknown, schemas: JsonSchema[], path: string, inArray: boolean): string {
  if (EXACT_PATHS.has(path)) return quote(value);
  const type = jsonType(value);
  if (type !== 'string') return type;
  const names = namesOf(schemas);
  if (names !== undefined) {
    // A status out of a list: the name itself is compared, except among an array's elements, where
    // each side may hold items in other states (a list of shipments, a parcel's tracking events).
    if (!inArray) return quote(value);
    const allowed = names.map(String).join('|');
    return names.includes(value)
      ? `one of ${allowed}`
      : `string not one of ${allowed}${EXAMPLE}${quote(value)}`;
  }
  const pattern = schemas.find((s) => typeof s.pattern === 'string')?.pattern as string | undefined;
  if (pattern !== undefined)
    return new RegExp(pattern).test(value as string)
      ? `string /${pattern}/`
      : `string not matching /${pattern}/${EXAMPLE}${quote(value)}`;
  return 'string';
}
