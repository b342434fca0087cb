import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { ClockState } from '../core/clock.js';
import type { WorkMetrics } from '../core/metrics.js';
import type { ConnectionUse, Engine } from '../db/sql.js';
import { RouteHistogram } from './route-histogram.js';

/** What a sandbox's metrics describe it by, and where they read the database's connections. */
export interface MetricsSources {
  version: string;
  engine: Engine;
  /** `--replica-id`. */
  replica: string;
  /** Read at each scrape, not on a timer. */
  connections: () => ConnectionUse;
  /** Whether the stores may keep what they read now (db/memory-permit.ts), read at each scrape. */
  keepsReads: () => boolean;
}

/** The label a request gets when no route of its method takes its path (404 route_not_found, 405). */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * A webhook attempt's outcome, as the delivery log's `error` names it (2xx is `delivered`). A kind
 * not listed here counts as `other`, so no value from outside can add a label.
 */
const ATTEMPT_OUTCOMES: Readonly<Record<string, string>> = {
  http: 'http_error',
  timeout: 'timeout',
  connection: 'connection_error',
  destination_not_allowed: 'destination_not_allowed',
};

/** Methods that get a label of their own; anything else Node's parser lets through is `other`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * Seconds: most answers take a millisecond or two (SQLite in the process), a PostgreSQL round trip
 * adds about as much, and a clock advance that runs a long timeline or waits on webhook sends takes
 * seconds. prom-client's default buckets start at 5 ms, where a sandbox's answers have mostly ended.
 */
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Seconds late. The background timer plans to the millisecond but wakes at least once a second (and
 * replicas' leases move in seconds), so on time is well under a second; minutes mean the process is
 * starved or the database is failing.
 */
const LAG_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/**
 * The metrics of one sandbox, in a registry of its own (several sandboxes may run in one process:
 * tests, `startSandbox()`), served by `GET /metrics` in Prometheus' text format. No label holds tenant
 * data: routes are their templates (`/v1/shipments/:id`, never an id), and no account, key or URL
 * appears.
 */
export class SandboxMetrics implements WorkMetrics {
  private readonly registry = new Registry();
  private readonly durations = new RouteHistogram(
    'http_request_duration_seconds',
    'Time from a request reaching the app to its answer starting (a stream counts until its headers)',
    REQUEST_BUCKETS,
  );
  private readonly attempts: Counter<'outcome'>;
  private readonly lag: Histogram;
  /**
   * `http_requests_total`, counted here in plain numbers and handed to its prom-client counter at a
   * scrape (the counter's `collect`): `inc` with labels hashes them on every request, a measurable
   * part of a read's CPU (docs/benchmark.md). Looked up by method, route and status without making a
   * string a request; kept in the order each series was first seen, which is the order prom-client
   * gives the series, as it was when every request was counted at once.
   */
  private readonly answered = new Map<string, Map<string, Map<number, AnsweredSeries>>>();
  private readonly series: AnsweredSeries[] = [];

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    const series = this.series;
    new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route template and status',
      labelNames: ['method', 'route', 'status'],
      registers,
      collect() {
        for (const counted of series) {
          if (counted.unscraped === 0) continue;
          this.inc(counted.labels, counted.unscraped);
          counted.unscraped = 0;
        }
      },
    });
    this.attempts = new Counter({
      name: 'webhook_attempts_total',
      help: 'Webhook delivery attempts that went out, by outcome',
      labelNames: ['outcome'],
      registers,
    });
    // Every outcome from the start: a rate over a series that appears late misses its first increase.
    for (const outcome of ['delivered', ...Object.values(ATTEMPT_OUTCOMES), 'other'])
      this.attempts.inc({ outcome }, 0);
    this.lag = new Histogram({
      name: 'scheduler_lag_seconds',
      help: "How late the background timer started an account's due work, in real seconds (running clocks only)",
      buckets: LAG_BUCKETS,
      registers,
    });
    new Gauge({
      name: 'db_pool_connections',
      help: 'Database connections by state (total, idle) and work waiting for one (waiting), at the scrape',
      labelNames: ['state'],
      registers,
      collect() {
        const use = sources.connections();
        this.set({ state: 'total' }, use.total);
        this.set({ state: 'idle' }, use.idle);
        this.set({ state: 'waiting' }, use.waiting);
      },
    });
    new Gauge({
      name: 'sandbox_keeps_reads',
      help: 'Whether this sandbox keeps what it reads in memory (1): over SQLite always, over PostgreSQL while it is the only replica',
      registers,
      collect() {
        this.set(sources.keepsReads() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'sandbox_info',
      help: "The sandbox's version, storage engine and replica id (always 1)",
      labelNames: ['version', 'engine', 'replica'],
      registers,
    }).set({ version: sources.version, engine: sources.engine, replica: sources.replica }, 1);
  }

  /** One answered request: `route` is the template that took it, or UNMATCHED_ROUTE. */
  request(method: string, route: string, status: number, seconds: number): void {
    const labelled = METHODS.has(method) ? method : 'other';
    this.seriesOf(labelled, route, status).unscraped += 1;
    this.durations.observe(labelled, route, seconds);
  }

  private seriesOf(method: string, route: string, status: number): AnsweredSeries {
    let byRoute = this.answered.get(method);
    if (!byRoute) {
      byRoute = new Map();
      this.answered.set(method, byRoute);
    }
    let byStatus = byRoute.get(route);
    if (!byStatus) {
      byStatus = new Map();
      byRoute.set(route, byStatus);
    }
    let counted = byStatus.get(status);
    if (!counted) {
      counted = { labels: { method, route, status: String(status) }, unscraped: 0 };
      byStatus.set(status, counted);
      this.series.push(counted);
    }
    return counted;
  }

  /**
   * In real seconds: the lateness on the account's clock over its speed. A frozen clock's virtual time
   * says nothing of how long the work waited, and a write waiting to be retried is due "at once"
   * (minus infinity): neither is observed.
   */
  schedulerLag(clock: Pick<ClockState, 'speed' | 'frozen'>, overdueMs: number): void {
    if (clock.frozen || !Number.isFinite(overdueMs)) return;
    this.lag.observe(overdueMs / clock.speed / 1000);
  }

  webhookAttempt(outcome: { ok: boolean; error: string | null }): void {
    const label = outcome.ok ? 'delivered' : (ATTEMPT_OUTCOMES[outcome.error ?? ''] ?? 'other');
    this.attempts.inc({ outcome: label });
  }

  /** The exposition's media type: `text/plain; version=0.0.4`. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Every metric of this sandbox, then the process's own, in Prometheus' text format. */
  async scrape(): Promise<string> {
    const [own, process] = await Promise.all([this.registry.metrics(), processRegistry().metrics()]);
    return `${own}${own.endsWith('\n') ? '' : '\n'}\n${this.durations.exposition()}\n${process}`;
  }
}

/** One series of `http_requests_total`: its labels, and the requests answered since the last scrape. */
interface AnsweredSeries {
  labels: { method: string; route: string; status: string };
  unscraped: number;
}

let processMetrics: Registry | undefined;

/**
 * The process's metrics (CPU, memory, handles, event loop delay, garbage collection, Node's version):
 * one registry a process, made at the first scrape. They describe the process, not a sandbox, and
 * prom-client's collector starts an event-loop-delay monitor and a garbage-collection observer that
 * it never stops: made per sandbox, a process that starts many (a test suite, `startSandbox()`) would
 * pile them up, and one that is never scraped pays for none.
 */
function processRegistry(): Registry {
  if (!processMetrics) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics });
  }
  return processMetrics;
}
