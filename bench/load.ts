import autocannon from 'autocannon';
import { cpuMillisOf } from './children.js';

export const DEFAULT_KEY = 'svc_test_DefaultSandboxKey000000000000000';

/** The README's first example shipment: a valid request every time. */
export const SHIPMENT_REQUEST = {
  from: {
    name: 'Ada Lovelace',
    address1: '417 Montgomery St',
    city: 'San Francisco',
    state: 'CA',
    zip: '94104',
    country: 'US',
  },
  to: {
    name: 'Grace Hopper',
    address1: '350 5th Ave',
    city: 'New York',
    state: 'NY',
    zip: '10118',
    country: 'US',
  },
  parcel: { weight: 1200, length: 30, width: 20, height: 10 },
  reference: 'order-1042',
};
export const SHIPMENT_BODY = JSON.stringify(SHIPMENT_REQUEST);

export const headersFor = (key: string) => ({
  authorization: `Bearer ${key}`,
  'content-type': 'application/json',
});

/** One JSON call for setting things up (not measured). Throws on an unexpected status. */
export async function api<T = Record<string, unknown>>(
  base: string,
  key: string | null,
  method: string,
  path: string,
  body?: unknown,
  expect: number[] = [200, 201],
): Promise<T> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!expect.includes(response.status))
    throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 500)}`);
  return (text ? JSON.parse(text) : {}) as T;
}

/** A fresh isolated account; its key. */
export async function createAccount(base: string, name: string): Promise<string> {
  const account = await api<{ api_key: string }>(base, null, 'POST', '/_sandbox/accounts', {
    name,
    plan: 'enterprise',
  });
  return account.api_key;
}

export interface LoadOptions {
  url: string;
  path: string;
  method?: 'GET' | 'POST';
  headers: Record<string, string>;
  connections: number;
  /** Seconds; or `amount` requests. */
  duration?: number;
  amount?: number;
  body?: string;
  /**
   * The body or path of each request (a fresh shipment id, a fresh label); `undefined` when the pool
   * is exhausted: the run stops there, and answers to requests sent after that are not counted.
   */
  next?: () => { body?: string; path?: string } | undefined;
  /** `[<id>]` in the body becomes a random id. */
  idReplacement?: boolean;
  /** Keep the bodies of 2xx answers (to collect ids). */
  onBody?: (status: number, body: string) => void;
  /** The server's pid, to report its CPU use during the run. */
  serverPid?: number;
  /** Throws when the server has died (checked before and after the run). */
  alive?: () => void;
}

export interface LoadResult {
  /** 2xx answers. */
  ok: number;
  non2xx: number;
  errors: number;
  statusCodes: Record<string, number>;
  seconds: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** CPU used during the run, in % of one core: the server's, and this process's (the load generator). */
  serverCpuPct: number | null;
  loadGenCpuPct: number;
  /** The pool of bodies ran out before the duration ended. */
  stoppedEarly: boolean;
  /** Every 2xx latency, sorted (left out of the JSON report). */
  samples: Float64Array;
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

export const round = (n: number, digits = 2) =>
  Number.isFinite(n) ? Math.round(n * 10 ** digits) / 10 ** digits : n;

/**
 * One autocannon run. Latencies are recorded here from each response's own high-resolution time
 * (autocannon's histogram rounds to whole milliseconds, too coarse for a 0.1 ms ceiling), for 2xx
 * answers only; requests per second are 2xx answers over the run's wall time.
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const latencies: number[] = [];
  let ok = 0;
  let non2xx = 0;
  let exhaustedAt: number | null = null;
  let lastOkAt = 0;
  let lastAt = 0;
  let instance: autocannon.Instance | undefined;
  let last: { body?: string; path?: string } = {};

  const request: autocannon.Request = {
    method: options.method ?? 'GET',
    path: options.path,
    headers: options.headers,
    ...(options.body === undefined ? {} : { body: options.body }),
  };
  const { next, onBody } = options;
  if (next) {
    request.setupRequest = (req) => {
      const item = exhaustedAt === null ? next() : undefined;
      if (item === undefined) {
        // The pool ran out: stop, and send the last request again (its answer is not counted).
        if (exhaustedAt === null) {
          exhaustedAt = performance.now();
          setImmediate(() => instance?.stop());
        }
        return { ...req, ...last };
      }
      last = item;
      return { ...req, ...item };
    };
  }
  if (onBody) request.onResponse = (status, body) => onBody(status, body);

  options.alive?.();
  const cpuBefore = options.serverPid === undefined ? null : cpuMillisOf(options.serverPid);
  const ownBefore = process.cpuUsage();
  const started = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon(
      {
        url: options.url,
        connections: options.connections,
        ...(options.amount === undefined ? { duration: options.duration ?? 10 } : { amount: options.amount }),
        requests: [request],
        timeout: 30,
        // How often autocannon checks whether to stop (1 s by default: up to a second idle after the work).
        sampleInt: 50,
        ...(options.idReplacement ? { idReplacement: true } : {}),
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    run.on('response', (_client: unknown, status: number, _bytes: number, time: number) => {
      const now = performance.now();
      // Sent after the pool ran out: a repeat, not part of the measure.
      if (exhaustedAt !== null && now - time > exhaustedAt) return;
      lastAt = now;
      if (status >= 200 && status < 300) {
        ok++;
        latencies.push(time);
        lastOkAt = now;
      } else {
        non2xx++;
      }
    });
    instance = run;
  });
  // The run ends with its last answer; a run cut short by its pool, with the last answer to a request
  // sent before the pool ran out.
  const ended = exhaustedAt === null ? lastAt || performance.now() : Math.max(exhaustedAt, lastOkAt);
  const seconds = (ended - started) / 1000;
  const wall = performance.now() - started;
  options.alive?.();
  const cpuAfter = options.serverPid === undefined ? null : cpuMillisOf(options.serverPid);
  const own = process.cpuUsage(ownBefore);

  const sorted = Float64Array.from(latencies).sort();
  const statusCodes: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {}))
    statusCodes[code] = Number(count);
  return {
    ok,
    non2xx,
    errors: result.errors,
    statusCodes,
    seconds: round(seconds, 3),
    rps: round(ok / seconds, 1),
    p50: round(percentile(sorted, 50), 3),
    p90: round(percentile(sorted, 90), 3),
    p99: round(percentile(sorted, 99), 3),
    max: round(sorted[sorted.length - 1] ?? Number.NaN, 3),
    serverCpuPct:
      cpuBefore === null || cpuAfter === null ? null : round(((cpuAfter - cpuBefore) / wall) * 100, 0),
    loadGenCpuPct: round(((own.user + own.system) / 1000 / wall) * 100, 0),
    stoppedEarly: exhaustedAt !== null,
    samples: sorted,
  };
}

/** Latencies of several runs together: rps averaged, percentiles over every sample. */
export function combine(runs: LoadResult[]): Pick<LoadResult, 'rps' | 'p50' | 'p99'> {
  const all = new Float64Array(runs.reduce((n, r) => n + r.samples.length, 0));
  let at = 0;
  for (const run of runs) {
    all.set(run.samples, at);
    at += run.samples.length;
  }
  all.sort();
  return {
    rps: round(runs.reduce((sum, r) => sum + r.rps, 0) / runs.length, 1),
    p50: round(percentile(all, 50), 3),
    p99: round(percentile(all, 99), 3),
  };
}

/**
 * Creates `count` shipments through the API at `connections` concurrency; their ids, and how long
 * it took. `reference` varies per request when `unique` is set.
 */
export async function createShipments(
  base: string,
  key: string,
  count: number,
  connections: number,
  options: { collectIds?: boolean; unique?: boolean } = {},
): Promise<{ ids: string[]; seconds: number; rps: number; failures: number }> {
  const ids: string[] = [];
  const body = options.unique
    ? JSON.stringify({ ...SHIPMENT_REQUEST, reference: 'bench-[<id>]' })
    : SHIPMENT_BODY;
  const result = await runLoad({
    url: base,
    path: '/v1/shipments',
    method: 'POST',
    headers: headersFor(key),
    connections,
    amount: count,
    body,
    ...(options.unique ? { idReplacement: true } : {}),
    ...(options.collectIds
      ? {
          onBody: (status: number, text: string) => {
            if (status === 201) ids.push((JSON.parse(text) as { id: string }).id);
          },
        }
      : {}),
  });
  return { ids, seconds: result.seconds, rps: result.rps, failures: result.non2xx + result.errors };
}

/** Buys a label for each shipment (all of them, at `connections` concurrency); the label ids. */
export async function createLabels(
  base: string,
  key: string,
  shipmentIds: string[],
  format: 'pdf' | 'png' | 'zpl',
  connections: number,
): Promise<{ ids: string[]; seconds: number; failures: number }> {
  const pool = [...shipmentIds];
  const ids: string[] = [];
  const result = await runLoad({
    url: base,
    path: '/v1/labels',
    method: 'POST',
    headers: headersFor(key),
    connections: Math.min(connections, pool.length),
    amount: pool.length,
    next: () => {
      const id = pool.pop();
      return id === undefined ? undefined : { body: JSON.stringify({ shipment_id: id, format }) };
    },
    onBody: (status, text) => {
      if (status === 201) ids.push((JSON.parse(text) as { id: string }).id);
    },
  });
  return { ids, seconds: result.seconds, failures: result.non2xx + result.errors };
}
