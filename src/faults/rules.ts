import type { Actor } from '../core/actor.js';
import { ApiError, invalidField } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { formatTimestamp } from '../core/time.js';
import type { CreateFaultInput } from './schema.js';
import type { FaultRule } from './store.js';

/** The code a fault answers with when the rule names none. */
export function defaultFaultCode(status: number): string {
  if (status === 429) return 'rate_limit_exceeded';
  if (status === 503) return 'service_unavailable';
  if (status >= 500) return 'internal_error';
  return 'fault_injected';
}

export function matches(rule: FaultRule, method: string, path: string): boolean {
  if (rule.method !== null && rule.method !== method) return false;
  return rule.path.endsWith('*') ? path.startsWith(rule.path.slice(0, -1)) : path === rule.path;
}

/** A rule from what `POST /_sandbox/faults` was given: a status, a delay or a drop, for a path under /v1. */
export function newFaultRule(actor: Actor, input: CreateFaultInput): FaultRule {
  if (input.status === undefined && !input.drop && !input.delay_ms) {
    throw new ApiError(422, 'missing_field', 'A fault needs a status, a delay_ms or drop: true.', {
      field: 'status',
    });
  }
  if (input.drop && input.status !== undefined) {
    throw invalidField('drop', "'drop' and 'status' exclude each other: a dropped connection has no status.");
  }
  if (input.code !== undefined && input.status === undefined) {
    throw invalidField('code', "'code' goes with a 'status'.");
  }
  const path = input.path.startsWith('/v1/') || input.path === '/v1' ? input.path : `/v1${input.path}`;
  return {
    id: newId('flt', actor.now),
    accountId: actor.accountId,
    method: input.method ?? null,
    path,
    status: input.status ?? null,
    code: input.status === undefined ? null : (input.code ?? defaultFaultCode(input.status)),
    retryAfter: input.retry_after ?? null,
    delayMs: input.delay_ms ?? 0,
    drop: input.drop ?? false,
    times: input.times ?? null,
    remaining: input.times ?? null,
    createdAt: actor.now,
  };
}

export function presentFault(rule: FaultRule) {
  return {
    id: rule.id,
    method: rule.method,
    path: rule.path,
    status: rule.status,
    code: rule.code,
    retry_after: rule.retryAfter,
    delay_ms: rule.delayMs,
    drop: rule.drop,
    times: rule.times,
    remaining: rule.remaining,
    created_at: formatTimestamp(rule.createdAt),
  };
}
