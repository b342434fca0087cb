import { randomBytes } from 'node:crypto';
import { type Answer, compareAnswers } from './compare.js';
import { ApiDescription, type JsonSchema } from './document.js';
import { ConformanceError } from './errors.js';
import { type HttpCall, send } from './http.js';
import { type JsonValue, SCRIPT, type ScriptInputs, type Step } from './script.js';
import type {
  ConformanceCleanup,
  ConformanceDifference,
  ConformanceOptions,
  ConformanceReport,
  ConformanceStep,
} from './types.js';

/** The sandbox the script runs against beside the target, and how to stop it. */
export interface Reference {
  /** Its base URL, `…/v1`. */
  url: string;
  origin: string;
  apiKey: string;
  stop(): Promise<void>;
}

export const DEFAULT_WEBHOOK_URL = 'https://example.com/shipping-sandbox-conformance';
const DEFAULT_TIMEOUT_MS = 30_000;
/** A well-formed test key that no account has. */
const UNKNOWN_KEY = `svc_test_${'0'.repeat(32)}`;

/** One side of the comparison: where it is, its key, and the answers it kept for later steps. */
interface Side {
  name: 'target' | 'sandbox';
  base: string;
  key: string;
  kept: Map<string, unknown>;
}

/** A step as it ran: both answers, or why it did not run. */
export interface StepRun {
  step: Step;
  skipped?: string;
  sandbox?: Answer;
  target?: Answer;
  differences: ConformanceDifference[];
}

/**
 * Runs the script against the target and a sandbox of its own (started by `startReference`, stopped
 * at the end), step by step, both sides at once, and reports every difference. Rejects with a
 * ConformanceError when the target does not answer the first call or refuses the key there.
 */
export async function runConformance(
  options: ConformanceOptions,
  startReference: () => Promise<Reference>,
): Promise<ConformanceReport> {
  const checked = checkOptions(options);
  const reference = await startReference();
  try {
    const { runs, cleanup } = await runScript(checked, reference);
    return reportOf(checked.target, runs, cleanup);
  } finally {
    await reference.stop();
  }
}

interface CheckedOptions {
  target: string;
  key: string;
  webhookUrl: string;
  timeoutMs: number;
}

function checkOptions(options: ConformanceOptions): CheckedOptions {
  if (typeof options !== 'object' || options === null)
    throw new TypeError('conformance(options): options must be an object.');
  const target = baseUrlOf(options.target);
  const key = testKeyOf(options.key);
  const webhookUrl = options.webhookUrl ?? DEFAULT_WEBHOOK_URL;
  if (!URL.canParse(webhookUrl))
    throw new TypeError(`conformance(options): webhookUrl ${JSON.stringify(webhookUrl)} is not a URL.`);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new TypeError('conformance(options): timeoutMs must be a number of milliseconds above 0.');
  return { target, key, webhookUrl, timeoutMs };
}

/** The target's base URL without a trailing slash; an http(s) URL whose path ends in `/v1`. */
export function baseUrlOf(text: unknown): string {
  const base = typeof text === 'string' ? text.trim().replace(/\/+$/, '') : '';
  let url: URL | undefined;
  try {
    url = new URL(base);
  } catch {
    url = undefined;
  }
  // Said before the URL is echoed back: a password in it must not reach a CI log.
  if (url?.username || url?.password)
    throw new TypeError('The target must not carry a user name or password: the key goes in its own option.');
  if (!url || !/^https?:$/.test(url.protocol) || !url.pathname.endsWith('/v1') || url.search || url.hash)
    throw new TypeError(
      `The target must be the API's base URL, ending in /v1 (https://api.example.com/v1); got ${JSON.stringify(text)}.`,
    );
  return base;
}

/** The key, unless it is none or a live one: the script creates shipments and buys labels with it. */
export function testKeyOf(key: unknown): string {
  const trimmed = typeof key === 'string' ? key.trim() : '';
  if (trimmed === '') throw new TypeError('The key must be a test key of the target (svc_test_…).');
  if (trimmed.startsWith('svc_live_'))
    throw new TypeError(
      'Refusing a live key (svc_live_…): the script creates shipments and buys labels with it. Give a test key of the target (svc_test_…).',
    );
  return trimmed;
}

export async function runScript(
  options: CheckedOptions,
  reference: Reference,
): Promise<{ runs: StepRun[]; cleanup: ConformanceCleanup[] }> {
  const api = new ApiDescription(await fetchDocument(reference.origin));
  const inputs: ScriptInputs = {
    webhook_url: options.webhookUrl,
    secret: `whsec_conformance_${randomBytes(16).toString('hex')}`,
  };
  const target: Side = { name: 'target', base: options.target, key: options.key, kept: new Map() };
  const sandbox: Side = { name: 'sandbox', base: reference.url, key: reference.apiKey, kept: new Map() };
  const created = new Ledger();
  const runs: StepRun[] = [];

  // Whatever happens on the way, what was created on the target is removed.
  let cleanup: ConformanceCleanup[] = [];
  try {
    for (const step of SCRIPT) {
      if (step.skip !== undefined) {
        runs.push({ step, skipped: step.skip, differences: [] });
        continue;
      }
      const toTarget = requestFor(step, target, inputs);
      const toSandbox = requestFor(step, sandbox, inputs);
      if (isMissing(toTarget) || isMissing(toSandbox)) {
        runs.push({
          step,
          skipped: (isMissing(toTarget) ? toTarget : (toSandbox as Missing)).missing,
          differences: [],
        });
        continue;
      }
      const [targetAnswer, sandboxAnswer] = await Promise.all([
        send(toTarget, options.timeoutMs),
        send(toSandbox, options.timeoutMs),
      ]);
      if (step === SCRIPT[0]) checkFirstAnswer(step, options.target, targetAnswer);
      keep(step, target, targetAnswer);
      keep(step, sandbox, sandboxAnswer);
      created.note(step, toTarget, targetAnswer);
      runs.push({
        step,
        sandbox: sandboxAnswer,
        target: targetAnswer,
        differences: compareAnswers(sandboxAnswer, targetAnswer, step.operation, api),
      });
    }
  } finally {
    cleanup = await created.cleanUp(target, options.timeoutMs);
  }
  return { runs, cleanup };
}

async function fetchDocument(origin: string): Promise<JsonSchema> {
  const response = await fetch(`${origin}/openapi.json`);
  if (!response.ok) throw new Error(`the sandbox answered ${response.status} to GET /openapi.json`);
  return (await response.json()) as JsonSchema;
}

/** No answer, or a 401/403, to the first call: nothing can be compared. */
function checkFirstAnswer(step: Step, target: string, answer: Answer): void {
  if (answer.status === null)
    throw new ConformanceError(
      'unreachable',
      `Could not run: the target ${target} could not be reached (${answer.failure}). Nothing was compared.`,
    );
  if (answer.status === 401 || answer.status === 403) {
    const error = (answer.json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
    const said = [error?.code, error?.message].filter((part) => typeof part === 'string').join(': ');
    throw new ConformanceError(
      'key_refused',
      `Could not run: the target refused the key on the first call (${step.call} answered ${answer.status}${said ? ` ${said}` : ''}). Give a test key of that deployment. Nothing was compared.`,
    );
  }
}

/** A step one side cannot make: it needs a value that an earlier answer did not give. */
interface Missing {
  missing: string;
}

const PLACEHOLDER = /\{(unknown:)?([a-z_]+)\.([A-Za-z0-9_.]+)\}/g;
/** The step that keeps each name (`as`), to say which answer a missing value should have come from. */
const KEPT_BY = new Map(SCRIPT.filter((s) => s.as).map((s) => [s.as as string, s.id]));

/** The call of a step on one side, its `{…}` filled with that side's values. */
function requestFor(step: Step, side: Side, inputs: ScriptInputs): HttpCall | Missing {
  const space = step.call.indexOf(' ');
  const method = step.call.slice(0, space);
  const where = step.call.slice(space + 1);
  let url: string;
  if (where.startsWith('{')) {
    // The whole URL is a value an answer gave (a label's label_url).
    const value = fill(where, side, inputs, (text) => text);
    if (typeof value !== 'string') return value;
    if (!/^https?:\/\//.test(value))
      return {
        missing: `needs ${where} to be an http(s) URL; the ${side.name} gave ${JSON.stringify(value)}`,
      };
    url = value;
  } else {
    const path = fill(where, side, inputs, encodeURIComponent);
    if (typeof path !== 'string') return path;
    url = `${side.base}${path}`;
  }

  const headers: Record<string, string> = {};
  if (step.auth === undefined || step.auth === 'key') headers.authorization = `Bearer ${side.key}`;
  if (step.auth === 'unknown') headers.authorization = `Bearer ${UNKNOWN_KEY}`;
  let body: string | undefined;
  if (step.rawBody !== undefined) body = step.rawBody;
  else if (step.body !== undefined) {
    const filled = fillJson(step.body, side, inputs);
    if (isMissing(filled)) return filled;
    body = JSON.stringify(filled);
  }
  if (body !== undefined) headers['content-type'] = 'application/json';
  return { method, url, headers, body, followRedirects: where.startsWith('{') };
}

function isMissing(value: unknown): value is Missing {
  return value !== null && typeof value === 'object' && 'missing' in value && Object.keys(value).length === 1;
}

function fillJson(value: JsonValue, side: Side, inputs: ScriptInputs): JsonValue | Missing {
  if (typeof value === 'string') return fill(value, side, inputs, (text) => text);
  if (Array.isArray(value)) {
    const items: JsonValue[] = [];
    for (const item of value) {
      const filled = fillJson(item, side, inputs);
      if (isMissing(filled)) return filled;
      items.push(filled as JsonValue);
    }
    return items;
  }
  if (value !== null && typeof value === 'object') {
    const object: Record<string, JsonValue> = {};
    for (const [key, item] of Object.entries(value)) {
      const filled = fillJson(item, side, inputs);
      if (isMissing(filled)) return filled;
      object[key] = filled as JsonValue;
    }
    return object;
  }
  return value;
}

/** A template with each `{name.field}` replaced by the side's value (passed through `encode`). */
function fill(
  template: string,
  side: Side,
  inputs: ScriptInputs,
  encode: (text: string) => string,
): string | Missing {
  let missing: Missing | undefined;
  const text = template.replace(
    PLACEHOLDER,
    (whole, unknown: string | undefined, name: string, field: string) => {
      const source = name === 'input' ? inputs : side.kept.get(name);
      const value = field
        .split('.')
        .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], source);
      if (typeof value !== 'string' && typeof value !== 'number') {
        const from = KEPT_BY.get(name);
        missing ??= {
          missing: from
            ? `needs ${whole.replace('unknown:', '')}, which the ${side.name}'s answer to ${from} did not give`
            : `needs ${whole}, which nothing gave`,
        };
        return '';
      }
      return encode(unknown ? unknownLike(String(value)) : String(value));
    },
  );
  return missing ?? text;
}

/**
 * A value of the same form as a real one that names nothing: the end of it turned to zeros (to ones if
 * it already ended in zeros). An id keeps its prefix and length, so a well-formed unknown id is asked
 * for, and a cursor keeps its shape with a signature that no longer holds.
 */
export function unknownLike(value: string): string {
  const count = Math.min(8, Math.max(1, Math.floor(value.length / 3)));
  const zeros = `${value.slice(0, -count)}${'0'.repeat(count)}`;
  return zeros === value ? `${value.slice(0, -count)}${'1'.repeat(count)}` : zeros;
}

/** Keeps a step's JSON answer under its name, when it succeeded. */
function keep(step: Step, side: Side, answer: Answer): void {
  if (step.as === undefined) return;
  if (answer.status !== null && answer.status >= 200 && answer.status < 300 && answer.json !== undefined)
    side.kept.set(step.as, answer.json);
  else side.kept.delete(step.as);
}

/**
 * What the script created on the target and has not removed: the shipments it has not cancelled and
 * the webhooks (which the script itself never deletes: `DELETE /webhooks/:id` is not an operation of
 * the specification, so only cleanup tries it).
 */
class Ledger {
  private readonly left = new Map<string, 'shipments' | 'webhooks'>();

  note(step: Step, request: HttpCall, answer: Answer): void {
    if (answer.status === null || answer.status < 200 || answer.status >= 300) return;
    const id = (answer.json as { id?: unknown } | undefined)?.id;
    if (request.method === 'POST' && typeof id === 'string') {
      if (step.operation === 'POST /shipments') this.left.set(id, 'shipments');
      if (step.operation === 'POST /webhooks') this.left.set(id, 'webhooks');
    }
    if (request.method === 'DELETE') {
      const last = decodeURIComponent(new URL(request.url).pathname.split('/').pop() ?? '');
      this.left.delete(last);
    }
  }

  async cleanUp(target: Side, timeoutMs: number): Promise<ConformanceCleanup[]> {
    const results: ConformanceCleanup[] = [];
    for (const [id, collection] of this.left) {
      const call = `DELETE /${collection}/${id}`;
      const answer = await send(
        {
          method: 'DELETE',
          url: `${target.base}/${collection}/${encodeURIComponent(id)}`,
          headers: { authorization: `Bearer ${target.key}` },
          followRedirects: false,
        },
        timeoutMs,
      );
      const done = answer.status !== null && answer.status >= 200 && answer.status < 300;
      results.push({ call, status: answer.status ?? `no answer (${answer.failure})`, done });
    }
    return results;
  }
}

export function reportOf(target: string, runs: StepRun[], cleanup: ConformanceCleanup[]): ConformanceReport {
  const steps: ConformanceStep[] = runs.map((run) => ({
    id: run.step.id,
    call: run.step.call,
    result: run.skipped !== undefined ? 'skipped' : run.differences.length > 0 ? 'different' : 'same',
    differences: run.differences,
    ...(run.skipped !== undefined && { reason: run.skipped }),
  }));
  const count = (result: ConformanceStep['result']) => steps.filter((step) => step.result === result).length;
  return {
    target,
    steps,
    summary: { same: count('same'), different: count('different'), skipped: count('skipped') },
    cleanup,
  };
}
