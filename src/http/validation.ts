import type { z } from 'zod';
import { ApiError } from '../core/errors.js';

type Target = 'json' | 'query' | 'param' | 'header' | 'cookie' | 'form';

/**
 * Turns the first zod issue into the contract's error. Body problems are 422 `missing_field` /
 * `invalid_field`; query and path problems are 400 `invalid_parameter`. The field is a dotted path
 * (`to.zip`, `parcel.weight`, `limit`).
 */
export function validationError(error: z.ZodError, target: Target, input: unknown): ApiError {
  const issue = error.issues[0];
  if (!issue) return new ApiError(422, 'invalid_field', 'The request is invalid.');

  let path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    path = [...path, String(issue.keys[0])];
    return fail(target, path, `Unknown field '${path.join('.')}'.`);
  }
  const field = path.join('.');
  const value = valueAt(input, issue.path);
  // Hono's query validator hands a repeated parameter over as the list of its values.
  if (target === 'query' && Array.isArray(value)) {
    return fail(target, path, `'${field}' may be given once; it was given ${value.length} times.`);
  }
  const missing = value === undefined;
  if (missing && target === 'json') {
    return new ApiError(422, 'missing_field', `'${field}' is required.`, { field });
  }
  return fail(target, path, describe(issue, field));
}

function fail(target: Target, path: string[], message: string): ApiError {
  const field = path.join('.');
  if (target === 'json') return new ApiError(422, 'invalid_field', message, { field });
  return new ApiError(400, 'invalid_parameter', message, { field });
}

function describe(issue: z.core.$ZodIssue, field: string): string {
  switch (issue.code) {
    case 'invalid_type':
      return `'${field}' must be ${article(issue.expected)}.`;
    case 'invalid_value':
      return `'${field}' must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}.`;
    default:
      // Our schemas phrase their own messages as "must …"; zod's defaults are whole sentences.
      if (issue.message.startsWith('must')) return `'${field}' ${issue.message}.`;
      if (issue.code === 'too_big' || issue.code === 'too_small') return `'${field}' ${bound(issue)}.`;
      return `${issue.message} (${field}).`;
  }
}

/** A size limit that a schema left to zod's words ("Too big: expected string to have <=100 characters"). */
function bound(issue: z.core.$ZodIssueTooBig | z.core.$ZodIssueTooSmall): string {
  const big = issue.code === 'too_big';
  const limit = Number(
    big ? (issue as z.core.$ZodIssueTooBig).maximum : (issue as z.core.$ZodIssueTooSmall).minimum,
  );
  const within = issue.inclusive === false ? (big ? 'less than' : 'more than') : big ? 'at most' : 'at least';
  const unit = issue.origin === 'string' ? ' characters' : issue.origin === 'array' ? ' items' : '';
  return `must be ${within} ${limit}${unit}`;
}

function article(expected: string): string {
  if (expected === 'object') return 'an object';
  if (expected === 'array') return 'an array';
  if (expected === 'int') return 'a whole number';
  return `a ${expected}`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}
