import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../core/errors.js';
import type { AppEnv } from '../http/context.js';
import type { FaultRule, FaultStore } from './store.js';

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

/**
 * Injected faults, as WireMock or Toxiproxy give them: the first matching rule of the account adds
 * its latency (real time), then drops the connection or answers its status and code; a rule with
 * neither only slows the request down.
 */
export function injectFaults(faults: FaultStore): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const rules = faults.active(c.get('auth').account.id);
    const rule = rules.length === 0 ? undefined : rules.find((r) => matches(r, c.req.method, c.req.path));
    if (!rule) return next();

    faults.spend(rule);
    if (rule.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, rule.delayMs));
    if (rule.drop) {
      const socket = (c.env as { incoming?: { socket?: { destroy(): void } } } | undefined)?.incoming?.socket;
      socket?.destroy();
      c.set('dropped', true);
      throw new ApiError(500, 'connection_dropped', 'The connection was dropped by an injected fault.');
    }
    if (rule.status !== null) {
      const headers: Record<string, string> =
        rule.status === 429 || rule.status === 503 ? { 'Retry-After': String(rule.retryAfter ?? 1) } : {};
      throw new ApiError(
        rule.status,
        rule.code ?? defaultFaultCode(rule.status),
        `Injected fault ${rule.id}: ${rule.status} for ${c.req.method} ${c.req.path}.`,
        { headers },
      );
    }
    return next();
  };
}
