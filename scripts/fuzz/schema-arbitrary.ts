import fc from 'fast-check';
import type { JsonSchema } from './document.js';

/*
 * JSON Schema (2020-12, as the OpenAPI 3.1 document writes it) to fast-check arbitraries of values
 * that conform to it. Written here because no maintained converter exists for this pair:
 * json-schema-fast-check covers a subset of older drafts and was archived in 2022, and zod-fast-check
 * stops at zod 3 and fast-check 3 (and would fuzz the sandbox's own zod schemas rather than the
 * document its users read). Only the keywords the document uses are understood; an unknown one is
 * ignored, so a value may then be refused, which the fuzzer accepts as long as the answer is a
 * documented error. `test/fuzz.test.ts` checks that the values conform.
 */

export interface ArbitraryContext {
  /** Follows a `$ref` of the document. */
  resolve(ref: string): JsonSchema;
  /**
   * Values worth trying for a property (real ids, loopback URLs, scenario names), asked with the
   * component it belongs to (`CreateLabel.shipment_id`) and then with its bare name (`shipment_id`);
   * realistic values also ask for a whole component (`Address`).
   */
  hint(name: string): fc.Arbitrary<unknown> | undefined;
  /**
   * Realistic values: a hint or the document's `example` wherever there is one, so that bodies get
   * past the sandbox's checks of meaning (a real address, an existing shipment) and reach the code
   * behind them. Otherwise any value the schema allows, hints among them.
   */
  realistic: boolean;
}

/** Long enough for every limit the document sets on request strings, short enough to stay fast. */
const LONGEST_FREE_STRING = 60;
const MAX_DEPTH = 12;

export function arbitraryOf(
  schema: JsonSchema,
  context: ArbitraryContext,
  where: { component?: string; property?: string; depth?: number } = {},
): fc.Arbitrary<unknown> {
  const depth = where.depth ?? 0;
  if (depth > MAX_DEPTH) return fc.constant(null);

  if (typeof schema.$ref === 'string') {
    const component = schema.$ref.split('/').pop();
    const whole = context.realistic && component ? context.hint(component) : undefined;
    if (whole) return whole;
    return arbitraryOf(context.resolve(schema.$ref), context, {
      ...where,
      ...(component ? { component } : {}),
      depth: depth + 1,
    });
  }

  const hinted = where.property ? hintFor(context, where.component, where.property) : undefined;
  const example = 'example' in schema ? schema.example : undefined;
  if (context.realistic && hinted) return hinted;
  if (context.realistic && example !== undefined) return fc.constant(example);
  const own = ownArbitrary(schema, context, where, depth);
  if (hinted) return fc.oneof(hinted, own);
  return own;
}

function hintFor(context: ArbitraryContext, component: string | undefined, property: string) {
  return (component && context.hint(`${component}.${property}`)) || context.hint(property);
}

function ownArbitrary(
  schema: JsonSchema,
  context: ArbitraryContext,
  where: { component?: string; property?: string },
  depth: number,
): fc.Arbitrary<unknown> {
  const next = { ...where, depth: depth + 1 };
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return fc.constantFrom(...schema.enum);
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.allOf))
    return arbitraryOf(mergeAllOf(schema.allOf as JsonSchema[], context), context, next);
  for (const keyword of ['anyOf', 'oneOf'] as const) {
    const options = schema[keyword];
    if (Array.isArray(options) && options.length > 0)
      return fc.oneof(...(options as JsonSchema[]).map((option) => arbitraryOf(option, context, next)));
  }
  if (Array.isArray(schema.type))
    return fc.oneof(...schema.type.map((type) => ownArbitrary({ ...schema, type }, context, where, depth)));

  switch (schema.type) {
    case 'string':
      return stringOf(schema);
    case 'integer':
      return integerOf(schema);
    case 'number':
      return numberOf(schema);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = (schema.items ?? {}) as JsonSchema;
      const minLength = numeric(schema.minItems) ?? 0;
      const maxLength = Math.max(minLength, Math.min(numeric(schema.maxItems) ?? 5, 8));
      return fc.array(arbitraryOf(items, context, { ...next, property: `${where.property ?? ''}[]` }), {
        minLength,
        maxLength,
      });
    }
    case 'object':
      return objectOf(schema, context, where.component, depth);
    default:
      // No type (`{}`): anything JSON.
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function objectOf(
  schema: JsonSchema,
  context: ArbitraryContext,
  component: string | undefined,
  depth: number,
) {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, property] of Object.entries(properties))
    model[name] = arbitraryOf(property, context, {
      ...(component ? { component } : {}),
      property: name,
      depth: depth + 1,
    });
  const known = fc.record(model, { requiredKeys: [...required].filter((name) => name in properties) });
  const extra = schema.additionalProperties;
  if (extra === false || extra === undefined || Object.keys(properties).length > 0) return known;
  const values =
    extra === true
      ? fc.jsonValue({ maxDepth: 1 })
      : arbitraryOf(extra as JsonSchema, context, { depth: depth + 1 });
  return fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), values, { maxKeys: 3 });
}

function stringOf(schema: JsonSchema): fc.Arbitrary<string> {
  const minLength = numeric(schema.minLength) ?? 0;
  const maxLength = numeric(schema.maxLength);
  if (schema.format === 'date-time') return timestamp();
  if (typeof schema.pattern === 'string') {
    const pattern = new RegExp(schema.pattern);
    return fc
      .stringMatching(pattern, maxLength === undefined ? {} : { maxLength })
      .filter((s) => s.length >= minLength && (maxLength === undefined || s.length <= maxLength));
  }
  const longest = Math.max(minLength, Math.min(maxLength ?? LONGEST_FREE_STRING, LONGEST_FREE_STRING));
  const free = fc.string({ minLength, maxLength: longest, unit: 'grapheme' });
  // The limits themselves are where off-by-one mistakes live: sometimes exactly the longest allowed.
  if (maxLength === undefined) return free;
  return fc.oneof(
    { weight: 4, arbitrary: free },
    fc.string({ minLength: maxLength, maxLength, unit: 'grapheme-ascii' }),
  );
}

/** A timestamp in the contract's form, around the present. */
export function timestamp(): fc.Arbitrary<string> {
  return fc
    .date({
      min: new Date('2000-01-01T00:00:00Z'),
      max: new Date('2100-01-01T00:00:00Z'),
      noInvalidDate: true,
    })
    .map((date) => `${date.toISOString().slice(0, 19)}Z`);
}

function integerOf(schema: JsonSchema): fc.Arbitrary<number> {
  const { min, max } = bounds(schema, 1);
  return fc.integer({
    min: Math.max(Math.ceil(min ?? -1_000_000), Number.MIN_SAFE_INTEGER),
    max: Math.min(Math.floor(max ?? 1_000_000), Number.MAX_SAFE_INTEGER),
  });
}

function numberOf(schema: JsonSchema): fc.Arbitrary<number> {
  const { min, max } = bounds(schema, Number.EPSILON);
  return fc.double({
    noNaN: true,
    noDefaultInfinity: true,
    ...(min === undefined ? {} : { min }),
    ...(max === undefined ? {} : { max }),
  });
}

/** Inclusive bounds, `exclusiveMinimum` and `exclusiveMaximum` moved inwards by `step`. */
function bounds(schema: JsonSchema, step: number) {
  const exclusiveMin = numeric(schema.exclusiveMinimum);
  const exclusiveMax = numeric(schema.exclusiveMaximum);
  const lows = [numeric(schema.minimum), exclusiveMin === undefined ? undefined : exclusiveMin + step];
  const highs = [numeric(schema.maximum), exclusiveMax === undefined ? undefined : exclusiveMax - step];
  const defined = (values: (number | undefined)[]) => values.filter((v): v is number => v !== undefined);
  const low = defined(lows);
  const high = defined(highs);
  return {
    min: low.length ? Math.max(...low) : undefined,
    max: high.length ? Math.min(...high) : undefined,
  };
}

/** `allOf` of objects as one object: the union of their properties and of their required lists. */
function mergeAllOf(parts: JsonSchema[], context: ArbitraryContext): JsonSchema {
  const resolved = parts.map((part) => (typeof part.$ref === 'string' ? context.resolve(part.$ref) : part));
  return {
    type: 'object',
    properties: Object.assign({}, ...resolved.map((part) => part.properties ?? {})),
    required: resolved.flatMap((part) => (Array.isArray(part.required) ? part.required : [])),
  };
}

const numeric = (value: unknown) => (typeof value === 'number' ? value : undefined);
