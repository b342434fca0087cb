import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { freePort, type Server, startSandbox } from './children.js';
import {
  api,
  combine,
  createAccount,
  createShipments,
  headersFor,
  type LoadResult,
  percentile,
  round,
  runLoad,
  SHIPMENT_REQUEST,
} from './load.js';
import type { Options } from './options.js';
import type { FigureRow, LoadRow } from './report.js';

type Log = (line: string) => void;

const SECRET = 'bench-webhook-secret-0123456789';
/** Events a second created in the background while the dead receivers are measured. */
const BACKGROUND_RATE = 50;

interface Tally {
  byAttempt: Map<string, number>;
  valid: number;
  invalid: number;
}

/** A receiver in this process: checks every signature, answers 200 (or 500 while `failing`). */
class Receiver {
  failing = false;
  readonly tallies = new Map<string, Tally>();
  /** Arrival time of each `shipment.created` delivery to /bystander, by shipment id. */
  readonly arrivals = new Map<string, number>();
  private server: HttpServer | undefined;
  port = 0;

  async start(): Promise<void> {
    this.server = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const tally = this.tally(req.url ?? '/');
        const expected = Buffer.from(`sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`);
        const given = Buffer.from(String(req.headers['service-signature'] ?? ''));
        if (given.length === expected.length && timingSafeEqual(given, expected)) tally.valid++;
        else tally.invalid++;
        const attempt = String(req.headers['service-delivery-attempt'] ?? '?');
        tally.byAttempt.set(attempt, (tally.byAttempt.get(attempt) ?? 0) + 1);
        if (req.url === '/bystander') {
          const envelope = JSON.parse(body.toString('utf8')) as { data: { id: string } };
          this.arrivals.set(envelope.data.id, performance.now());
        }
        res.writeHead(this.failing ? 500 : 200, { 'content-type': 'text/plain' }).end('ok');
      });
    });
    this.server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
  }

  tally(path: string): Tally {
    let tally = this.tallies.get(path);
    if (!tally) {
      tally = { byAttempt: new Map(), valid: 0, invalid: 0 };
      this.tallies.set(path, tally);
    }
    return tally;
  }

  count(path: string, attempt: string): number {
    return this.tally(path).byAttempt.get(attempt) ?? 0;
  }

  async waitFor(path: string, attempt: string, count: number, timeoutMs = 120_000): Promise<number> {
    const started = performance.now();
    while (this.count(path, attempt) < count) {
      if (performance.now() - started > timeoutMs)
        throw new Error(`receiver: ${this.count(path, attempt)} of ${count} deliveries to ${path}`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    return performance.now();
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.server?.closeAllConnections();
      this.server?.close(() => resolve());
    });
  }
}

/** Accepts connections and never answers. */
async function hangingReceiver(): Promise<{ port: number; server: NetServer; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { port: typeof address === 'object' && address ? address.port : 0, server, sockets };
}

/** Creates a shipment every 1/rate seconds, one at a time, until stopped; when each was answered. */
function backgroundCreator(base: string, key: string, rate: number) {
  let running = true;
  let failed = 0;
  const answered = new Map<string, number>();
  const body = JSON.stringify(SHIPMENT_REQUEST);
  const done = (async () => {
    const started = performance.now();
    while (running) {
      const response = await fetch(`${base}/v1/shipments`, {
        method: 'POST',
        headers: headersFor(key),
        body,
      });
      const text = await response.text();
      if (response.status === 201) answered.set((JSON.parse(text) as { id: string }).id, performance.now());
      else failed++;
      const next = started + ((answered.size + failed) * 1000) / rate;
      const wait = next - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      return { created: answered.size, failed, answered };
    },
  };
}

async function registerWebhook(base: string, key: string, url: string): Promise<string> {
  const webhook = await api<{ id: string }>(base, key, 'POST', '/v1/webhooks', {
    url,
    events: ['shipment.created'],
    secret: SECRET,
  });
  return webhook.id;
}

/**
 * Signed deliveries a second to a local receiver, two ways, and what dead receivers (one that
 * never answers, one on a closed port) do to the API's latency.
 */
export async function webhooks(
  options: Options,
  log: Log,
): Promise<{ rows: LoadRow[]; figures: FigureRow[] }> {
  const { connections } = options;
  const events = options.webhookEvents;
  const figures: FigureRow[] = [];
  const rows: LoadRow[] = [];
  const receiver = new Receiver();
  await receiver.start();
  const hang = await hangingReceiver();
  let sandbox: Server | undefined;
  try {
    sandbox = await startSandbox(options.sandboxNodeArgs);
    const base = sandbox.url;
    const hookUrl = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;

    // 1. The scheduler's delivery rate: N first tries fail (500) on a frozen clock, then one advance
    //    of a minute sends the N retries and answers once all of them are answered.
    {
      const key = await createAccount(base, 'bench-webhooks-batch');
      await api(base, key, 'POST', '/_sandbox/clock', { frozen: true });
      await registerWebhook(base, key, hookUrl('/batch'));
      receiver.failing = true;
      await createShipments(base, key, events, connections);
      await receiver.waitFor('/batch', '0', events);
      receiver.failing = false;
      const started = performance.now();
      const advanced = await api<{ ran: { kind: string }[] }>(base, key, 'POST', '/_sandbox/clock/advance', {
        by: '1m',
      });
      const ms = performance.now() - started;
      const delivered = receiver.count('/batch', '1');
      const tally = receiver.tally('/batch');
      log(
        `webhooks: advance sent ${delivered} retries in ${round(ms, 0)} ms (${advanced.ran.length} jobs ran)`,
      );
      figures.push({
        section: 'webhooks',
        scenario: `webhook deliveries, scheduled: ${events.toLocaleString('en-US')} retries sent by one clock advance`,
        figure: `${Math.round(delivered / (ms / 1000))} deliveries/s (${delivered} in ${round(ms, 0)} ms; signatures ${tally.valid} valid, ${tally.invalid} invalid)`,
        details: {
          ms: round(ms, 1),
          delivered,
          jobs: advanced.ran.length,
          valid: tally.valid,
          invalid: tally.invalid,
        },
      });
    }

    // 2. Live: shipments created as fast as the API takes them, each event delivered at once.
    {
      const key = await createAccount(base, 'bench-webhooks-live');
      await registerWebhook(base, key, hookUrl('/live'));
      const started = performance.now();
      const made = await createShipments(base, key, events, connections);
      const ended = await receiver.waitFor('/live', '0', events);
      const seconds = (ended - started) / 1000;
      const tally = receiver.tally('/live');
      log(
        `webhooks: live ${events} shipments in ${made.seconds} s, all delivered after ${round(seconds, 2)} s ` +
          `(${tally.valid} valid signatures)`,
      );
      figures.push({
        section: 'webhooks',
        scenario: `webhook deliveries, live: ${events.toLocaleString('en-US')} shipments created at ${connections} connections`,
        figure: `${Math.round(events / seconds)} deliveries/s (created in ${made.seconds} s, last delivered at ${round(seconds, 2)} s; signatures ${tally.valid} valid, ${tally.invalid} invalid)`,
        details: {
          createSeconds: made.seconds,
          deliveredSeconds: round(seconds, 3),
          valid: tally.valid,
          invalid: tally.invalid,
        },
      });
    }

    await sandbox.stop();
    sandbox = undefined;

    // 3. Dead receivers.
    const dead = await deadReceivers(options, log, receiver, hang.port);
    rows.push(...dead.rows);
    figures.push(...dead.figures);
    return { rows, figures };
  } finally {
    await sandbox?.stop();
    await receiver.stop();
    for (const socket of hang.sockets) socket.destroy();
    await new Promise((resolve) => hang.server.close(resolve));
  }
}

const VARIANTS = ['none', 'healthy', 'dead'] as const;
type Variant = (typeof VARIANTS)[number];

/**
 * The API's latency while events fire into one receiver that hangs and one closed port (the timeout
 * at its default), against the same load into an account whose webhook answers at once, and into
 * one without webhooks. Each phase runs on a sandbox of its own (a dead receiver's backlog outlives
 * its phase and would leak into the next), and the variants alternate like the ceiling pairs.
 * Meanwhile a bystander account's webhook, to a receiver that answers, gets an event every 100 ms:
 * whether its deliveries arrive shows whether dead receivers hold up other accounts.
 */
async function deadReceivers(
  options: Options,
  log: Log,
  receiver: Receiver,
  hangingPort: number,
): Promise<{ rows: LoadRow[]; figures: FigureRow[] }> {
  const { connections, duration } = options;
  const runs: Record<Variant, LoadResult[]> = { none: [], healthy: [], dead: [] };
  const bystander: Record<Variant, { sent: number; latencies: number[] }> = {
    none: { sent: 0, latencies: [] },
    healthy: { sent: 0, latencies: [] },
    dead: { sent: 0, latencies: [] },
  };
  const phases: Record<string, unknown>[] = [];
  let attempts: Record<string, Record<string, number>> = {};
  const grace = options.quick ? 1000 : 2000;
  const hookUrl = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;

  for (let r = 0; r < options.rounds; r++) {
    for (const variant of VARIANTS) {
      const sandbox = await startSandbox(options.sandboxNodeArgs);
      try {
        const base = sandbox.url;
        const key = await createAccount(base, `bench-webhooks-${variant}`);
        const bystanderKey = await createAccount(base, 'bench-webhooks-bystander');
        await registerWebhook(base, bystanderKey, hookUrl('/bystander'));
        const hooks: Record<string, string> = {};
        if (variant === 'healthy') hooks.healthy = await registerWebhook(base, key, hookUrl('/healthy'));
        if (variant === 'dead') {
          hooks.hanging = await registerWebhook(base, key, `http://127.0.0.1:${hangingPort}/never`);
          hooks.refused = await registerWebhook(base, key, `http://127.0.0.1:${await freePort()}/closed`);
        }
        const shipment = await api<{ id: string }>(base, key, 'POST', '/v1/shipments', SHIPMENT_REQUEST);
        const path = `/v1/shipments/${shipment.id}`;
        await runLoad({ url: base, path, headers: headersFor(key), connections, amount: 500 });

        const creator = backgroundCreator(base, key, BACKGROUND_RATE);
        const probe = backgroundCreator(base, bystanderKey, 10);
        const result = await runLoad({
          url: base,
          path,
          headers: headersFor(key),
          connections,
          duration,
          serverPid: sandbox.pid,
          alive: sandbox.assertAlive,
        });
        const background = await creator.stop();
        const probed = await probe.stop();
        // The bystander's deliveries of this phase, given a moment to arrive.
        const deadline = performance.now() + grace;
        while (
          [...probed.answered.keys()].some((id) => !receiver.arrivals.has(id)) &&
          performance.now() < deadline
        )
          await new Promise((resolve) => setTimeout(resolve, 10));
        const latencies = [...probed.answered].flatMap(([id, at]) => {
          const arrived = receiver.arrivals.get(id);
          return arrived === undefined ? [] : [Math.max(0, arrived - at)];
        });
        if (variant === 'dead') {
          attempts = {};
          for (const [name, id] of Object.entries(hooks))
            attempts[name] = await deliveryCounts(base, key, id);
        }
        runs[variant].push(result);
        bystander[variant].sent += probed.answered.size;
        bystander[variant].latencies.push(...latencies);
        const sorted = Float64Array.from(latencies).sort();
        phases.push({
          round: r + 1,
          variant,
          rps: result.rps,
          p50: result.p50,
          p99: result.p99,
          created: background.created,
          bystanderSent: probed.answered.size,
          bystanderDelivered: latencies.length,
          bystanderP50: round(percentile(sorted, 50), 1),
          bystanderMax: round(sorted[sorted.length - 1] ?? Number.NaN, 1),
        });
        log(
          `  GET /v1/shipments/:id, webhooks ${variant}: ${result.rps} rps p50 ${result.p50} p99 ${result.p99} ` +
            `(${background.created} shipments created meanwhile; bystander deliveries ` +
            `${latencies.length}/${probed.answered.size}, p50 ${round(percentile(sorted, 50), 1)} ms)`,
        );
      } finally {
        await sandbox.stop();
      }
    }
  }

  const none = combine(runs.none);
  const healthy = combine(runs.healthy);
  const dead = combine(runs.dead);
  const change = (a: number, b: number) => round((a / b - 1) * 100, 1);
  const signed = (n: number) => `${n >= 0 ? '+' : ''}${n}%`;
  const vsHealthy = {
    p50: change(dead.p50, healthy.p50),
    p99: change(dead.p99, healthy.p99),
    rps: change(dead.rps, healthy.rps),
  };
  const vsNone = {
    p50: change(dead.p50, none.p50),
    p99: change(dead.p99, none.p99),
    rps: change(dead.rps, none.rps),
  };
  // "Adds no measurable latency": within 10% of the same load into a receiver that answers.
  const met = dead.p50 <= healthy.p50 * 1.1 && dead.rps >= healthy.rps * 0.9;
  log(
    `webhooks: dead vs healthy receiver: p50 ${signed(vsHealthy.p50)}, p99 ${signed(vsHealthy.p99)}, ` +
      `rps ${signed(vsHealthy.rps)}`,
  );
  const labels: Record<Variant, string> = {
    none: 'GET /v1/shipments/:id, events, no webhook',
    healthy: 'GET /v1/shipments/:id, events to a receiver that answers',
    dead: 'GET /v1/shipments/:id, events to a hanging and a closed receiver',
  };
  const rows: LoadRow[] = VARIANTS.map((variant) => ({
    section: 'webhooks',
    scenario: labels[variant],
    connections,
    sandbox: combine(runs[variant]),
    note: `${BACKGROUND_RATE} events/s`,
    ...(variant === 'dead' ? { target: { text: 'p50, rps within 10% of healthy', met } } : {}),
    runs: { sandbox: runs[variant], ceiling: [] },
  }));
  const bystanderFigure = (variant: Variant) => {
    const { sent, latencies } = bystander[variant];
    const sorted = Float64Array.from(latencies).sort();
    return (
      `${latencies.length}/${sent} delivered, p50 ${round(percentile(sorted, 50), 1)} ms, ` +
      `max ${round(sorted[sorted.length - 1] ?? Number.NaN, 0)} ms`
    );
  };
  const blocked = bystander.dead.latencies.length < bystander.dead.sent;
  const figures: FigureRow[] = [
    {
      section: 'webhooks',
      scenario: 'dead webhook receivers (one hangs, one refuses) against a receiver that answers',
      figure:
        `GET p50 ${signed(vsHealthy.p50)}, p99 ${signed(vsHealthy.p99)}, rps ${signed(vsHealthy.rps)} ` +
        `(against no webhook: p50 ${signed(vsNone.p50)}, rps ${signed(vsNone.rps)})`,
      target: { text: 'no measurable latency (p50, rps within 10%)', met },
      details: { none, healthy, dead, vsHealthy, vsNone, attempts, phases },
    },
    {
      section: 'webhooks',
      scenario: "another account's webhook (receiver answers, 10 events/s) beside the phase's 50 events/s",
      figure:
        `with dead receivers: ${bystanderFigure('dead')}; with a receiver that answers: ` +
        `${bystanderFigure('healthy')}; without webhooks: ${bystanderFigure('none')}`,
      note: `counted within the phase plus ${grace} ms`,
      details: { grace, bystander: Object.fromEntries(VARIANTS.map((v) => [v, bystanderFigure(v)])) },
      // Not one of the issue's targets: the README's promise that a slow receiver holds up no one.
      target: { text: '(README: holds up no one else)', met: !blocked },
    },
  ];
  return { rows, figures };
}

async function deliveryCounts(base: string, key: string, webhookId: string): Promise<Record<string, number>> {
  const list = await api<{ data: { status: string; error: string | null }[] }>(
    base,
    key,
    'GET',
    `/_sandbox/webhooks/${webhookId}/deliveries?limit=1000`,
  );
  const counts: Record<string, number> = {};
  for (const d of list.data) {
    const name = `${d.status}${d.error ? `/${d.error}` : ''}`;
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}
