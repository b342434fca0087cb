/**
 * A histogram by method and route (`http_request_duration_seconds`), counted here and written out at
 * a scrape in Prometheus' text format (0.0.4), as prom-client writes its own. Why not prom-client's
 * Histogram: it hashes and checks its labels on every observation, a measurable part of a read's CPU
 * (docs/benchmark.md), and takes no counts gathered elsewhere. Here an observation is two map lookups
 * and a bucket's count.
 */
export class RouteHistogram {
  private readonly byMethod = new Map<string, Map<string, Series>>();

  constructor(
    private readonly name: string,
    private readonly help: string,
    /** Upper bounds, ascending; `+Inf` is implied. */
    private readonly bounds: readonly number[],
  ) {}

  observe(method: string, route: string, value: number): void {
    let byRoute = this.byMethod.get(method);
    if (!byRoute) {
      byRoute = new Map();
      this.byMethod.set(method, byRoute);
    }
    let series = byRoute.get(route);
    if (!series) {
      series = { counts: this.bounds.map(() => 0), sum: 0, count: 0 };
      byRoute.set(route, series);
    }
    // The first bucket whose bound is at least the value (`le`); past the last, only `+Inf` holds it.
    let bucket = 0;
    while (bucket < this.bounds.length && value > (this.bounds[bucket] as number)) bucket++;
    if (bucket < this.bounds.length) series.counts[bucket] = (series.counts[bucket] as number) + 1;
    series.sum += value;
    series.count += 1;
  }

  /** The family's lines: each series' cumulative buckets, its sum and its count. */
  exposition(): string {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} histogram`];
    for (const [method, byRoute] of this.byMethod) {
      for (const [route, series] of byRoute) {
        const labels = `method="${escapeLabel(method)}",route="${escapeLabel(route)}"`;
        let below = 0;
        this.bounds.forEach((bound, i) => {
          below += series.counts[i] as number;
          lines.push(`${this.name}_bucket{le="${bound}",${labels}} ${below}`);
        });
        lines.push(
          `${this.name}_bucket{le="+Inf",${labels}} ${series.count}`,
          `${this.name}_sum{${labels}} ${series.sum}`,
          `${this.name}_count{${labels}} ${series.count}`,
        );
      }
    }
    return `${lines.join('\n')}\n`;
  }
}

interface Series {
  /** Observations a bucket, not yet cumulative. */
  counts: number[];
  sum: number;
  count: number;
}

const escapeHelp = (text: string) => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const escapeLabel = (text: string) => escapeHelp(text).replace(/"/g, '\\"');
