import type { Context, MiddlewareHandler, Next } from 'hono';
import type { Caller } from '../core/actor.js';
import { ApiError } from '../core/errors.js';
import type { AppEnv } from '../http/context.js';
import { dropConnection } from '../http/node-adapter.js';
import { defaultFaultCode, matches } from './rules.js';
import type { FaultRule, FaultStore } from './store.js';

/**
 * Injected faults, as WireMock or Toxiproxy give them: the first matching rule of the account adds
 * its latency (real time), then drops the connection or answers its status and code; a rule with
 * neither only slows the request down.
 */
export function injectFaults(
  faults: FaultStore,
  /** False when the caller's key lookup found no rule in play for its account: nothing to read. */
  mayHaveRules: (caller: Caller) => boolean = () => true,
): MiddlewareHandler<AppEnv> {
  // Not async: nearly every request has no rule in play, or its account's rules in memory (SQLite),
  // and is handed on without a promise turn of this step's own.
  return (c, next) => {
    const caller = c.get('caller');
    if (!mayHaveRules(caller)) return next();
    const rules = faults.active(caller.accountId);
    if (rules instanceof Promise) return rules.then((read) => playFirstMatch(faults, read, c, next));
    return playFirstMatch(faults, rules, c, next);
  };
}

/** The first of the account's rules that matches the request, played; or the request handed on. */
function playFirstMatch(faults: FaultStore, rules: FaultRule[], c: Context<AppEnv>, next: Next) {
  const rule = rules.length === 0 ? undefined : rules.find((r) => matches(r, c.req.method, c.req.path));
  return rule ? play(faults, rule, c, next) : next();
}

/** A rule met: its latency, then its dropped connection or its answer. */
async function play(faults: FaultStore, rule: FaultRule, c: Context<AppEnv>, next: Next) {
  // A counted rule another request spent first has no use left for this one.
  if (!(await faults.spend(rule))) return next();
  if (rule.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, rule.delayMs));
  if (rule.drop) {
    dropConnection(c);
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
}
