import pg from 'pg';
import { createDatabase, type PostgresServer, startPostgresServer } from '../scripts/embedded-postgres.js';
import { type Server, startSandbox } from './children.js';
import {
  api,
  combine,
  createAccount,
  createShipments,
  headersFor,
  type LoadResult,
  round,
  runLoad,
  SHIPMENT_BODY,
  SHIPMENT_REQUEST,
} from './load.js';
import type { Options } from './options.js';
import type { FigureRow, LoadRow } from './report.js';

type Log = (line: string) => void;

/**
 * Two replicas over one PostgreSQL database beside one replica over another database of the same
 * server, in one run: the same requests, the pair's spread over both (half the connections each, which
 * is what a round-robin balancer does to a steady load). Then whether every write acknowledged by one
 * replica reads back at once from the other, and what a request costs the database: statements (each
 * one round trip) and transactions, counted by the server itself (pg_stat_statements).
 *
 * On one 2-core machine the pair shares the cores the single replica had, with the database on them
 * too, so the total is not expected to grow: the figures say what a replica costs, not how far they
 * scale (docs/scaling.md).
 */
export async function replicas(
  options: Options,
  log: Log,
): Promise<{ rows: LoadRow[]; figures: FigureRow[] }> {
  const rows: LoadRow[] = [];
  const figures: FigureRow[] = [];
  const { connections, duration, rounds } = options;
  const started: Server[] = [];
  let server: PostgresServer | undefined;
  try {
    server = await startPostgresServer({ settings: ['shared_preload_libraries=pg_stat_statements'] });
    const [alone, shared] = [await createDatabase(server.url), await createDatabase(server.url)] as const;
    const single = await startSandbox(options.sandboxNodeArgs, { database: alone });
    started.push(single);
    const pair = await Promise.all([
      startSandbox(options.sandboxNodeArgs, { database: shared }),
      startSandbox(options.sandboxNodeArgs, { database: shared }),
    ]);
    started.push(...pair);
    const [first, second] = pair as [Server, Server];
    log(`replicas: PostgreSQL on port ${server.port}, one replica and a pair`);

    const setUp = async (sandbox: Server) => {
      const readKey = await createAccount(sandbox.url, 'bench-read');
      const writeKey = await createAccount(sandbox.url, 'bench-write');
      const made = await createShipments(sandbox.url, readKey, 500, connections, { collectIds: true });
      if (made.failures > 0 || !made.ids[0]) throw new Error('replicas: could not create shipments');
      return { readKey, writeKey, shipmentId: made.ids[0] };
    };
    const onSingle = await setUp(single);
    const onPair = await setUp(first);

    const endpoints = [
      { scenario: 'GET /v1/shipments/:id', read: true },
      { scenario: 'POST /v1/shipments', read: false },
    ];
    for (const endpoint of endpoints) {
      const load = (
        sandbox: Server,
        side: typeof onSingle,
        share: number,
        extra: { duration?: number; amount?: number },
      ) =>
        runLoad({
          url: sandbox.url,
          path: endpoint.read ? `/v1/shipments/${side.shipmentId}` : '/v1/shipments',
          method: endpoint.read ? 'GET' : 'POST',
          headers: headersFor(endpoint.read ? side.readKey : side.writeKey),
          connections: share,
          alive: sandbox.assertAlive,
          ...(endpoint.read ? {} : { body: SHIPMENT_BODY }),
          ...extra,
        });
      const half = Math.max(1, Math.ceil(connections / 2));
      const loadPair = (extra: { duration?: number; amount?: number }) =>
        Promise.all([load(first, onPair, half, extra), load(second, onPair, half, extra)]);
      // Warm-up, not recorded.
      await load(single, onSingle, connections, { amount: 500 });
      await loadPair({ amount: 250 });
      const runs: { single: LoadResult; pair: LoadResult[] }[] = [];
      for (let i = 0; i < rounds; i++) {
        runs.push({
          single: await load(single, onSingle, connections, { duration }),
          pair: await loadPair({ duration }),
        });
      }
      const pairRps = (run: (typeof runs)[number]) => run.pair.reduce((sum, part) => sum + part.rps, 0);
      const ratios = runs.map((run) => pairRps(run) / run.single.rps);
      const ratio = ratios.reduce((a, b) => a + b, 0) / ratios.length;
      const singleFigures = combine(runs.map((run) => run.single));
      const pairLatency = combine(runs.flatMap((run) => run.pair));
      const pairTotal = runs.reduce((sum, run) => sum + pairRps(run), 0) / runs.length;
      log(
        `replicas: ${endpoint.scenario}: two replicas ${Math.round(pairTotal)} rps together, one ` +
          `${Math.round(singleFigures.rps)} rps, ratio ${round(ratio)}`,
      );
      rows.push({
        section: 'replicas',
        scenario: `${endpoint.scenario}, two replicas over one PostgreSQL`,
        connections,
        sandbox: { ...pairLatency, rps: round(pairTotal, 1) },
        reference: { name: 'one replica', ...singleFigures },
        referenceRatio: ratio,
        referencePairRatios: ratios,
        target: { text: '(recorded: on 2 cores the total need not grow)', met: null },
        note: 'half the connections to each replica; PostgreSQL on the same machine',
      });
    }

    figures.push(
      await readYourWrites(first, second, onPair.writeKey, options.quick ? 200 : 1000, connections, log),
    );
    figures.push(
      ...(await costPerRequest(shared, first, onPair, options.quick ? 300 : 2000, connections, log)),
    );
    return { rows, figures };
  } finally {
    await Promise.allSettled(started.map((sandbox) => sandbox.stop()));
    await server?.stop();
  }
}

/**
 * Writes through one replica, each read back at once from the other (alternating which is which):
 * how many acknowledged writes the other replica did not show.
 */
async function readYourWrites(
  first: Server,
  second: Server,
  key: string,
  count: number,
  connections: number,
  log: Log,
): Promise<FigureRow> {
  let next = 0;
  let stale = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const [writer, reader] = i % 2 === 0 ? [first, second] : [second, first];
      const created = await api<{ id: string; status: string }>(
        writer.url,
        key,
        'POST',
        '/v1/shipments',
        SHIPMENT_REQUEST,
      );
      const read = await api<{ id: string; status: string }>(
        reader.url,
        key,
        'GET',
        `/v1/shipments/${created.id}`,
      );
      if (read.id !== created.id || read.status !== created.status) stale++;
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  log(`replicas: ${count - stale} of ${count} writes read back at once from the other replica`);
  return {
    section: 'replicas',
    scenario: 'writes acknowledged by one replica, read back at once from the other',
    figure: `${count - stale} of ${count}`,
    target: { text: 'all of them', met: stale === 0 },
  };
}

/**
 * What one request costs the database, as its statistics count it: statements (each a round trip
 * from the replica) and transactions, less what the replicas do on their own meanwhile (heartbeats,
 * the scheduler's look for due work), measured over as long with no requests.
 */
async function costPerRequest(
  databaseUrl: string,
  sandbox: Server,
  side: { readKey: string; writeKey: string; shipmentId: string },
  count: number,
  connections: number,
  log: Log,
): Promise<FigureRow[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const counters = async () => {
      const statements = await client.query<{ calls: string }>(
        'SELECT coalesce(sum(calls), 0) AS calls FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())',
      );
      const transactions = await client.query<{ xacts: string }>(
        'SELECT xact_commit + xact_rollback AS xacts FROM pg_stat_database WHERE datname = current_database()',
      );
      return {
        statements: Number(statements.rows[0]?.calls),
        transactions: Number(transactions.rows[0]?.xacts),
      };
    };
    // The statistics of this client's own two reads are counted too: one of each per reading.
    const measure = async (run: () => Promise<unknown>) => {
      await client.query('SELECT pg_stat_statements_reset()');
      const before = await counters();
      const startedAt = performance.now();
      await run();
      const ms = performance.now() - startedAt;
      // The transaction counts reach the statistics a moment late (PostgreSQL reports them when idle).
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const after = await counters();
      return {
        statements: after.statements - before.statements,
        transactions: after.transactions - before.transactions,
        ms,
      };
    };
    const idle = await measure(() => new Promise((resolve) => setTimeout(resolve, 2_000)));
    const background = (ms: number) => ({
      statements: (idle.statements * (ms + 1_000)) / (idle.ms + 1_000),
      transactions: (idle.transactions * (ms + 1_000)) / (idle.ms + 1_000),
    });
    const kinds = [
      {
        scenario: 'GET /v1/shipments/:id',
        path: `/v1/shipments/${side.shipmentId}`,
        method: 'GET' as const,
        key: side.readKey,
      },
      {
        scenario: 'POST /v1/shipments',
        path: '/v1/shipments',
        method: 'POST' as const,
        key: side.writeKey,
        body: SHIPMENT_BODY,
      },
    ];
    const figures: FigureRow[] = [];
    for (const kind of kinds) {
      let ok = 0;
      const cost = await measure(async () => {
        const result = await runLoad({
          url: sandbox.url,
          path: kind.path,
          method: kind.method,
          headers: headersFor(kind.key),
          connections,
          amount: count,
          ...(kind.body ? { body: kind.body } : {}),
        });
        ok = result.ok;
      });
      const quiet = background(cost.ms);
      const statements = (cost.statements - quiet.statements) / Math.max(ok, 1);
      const transactions = (cost.transactions - quiet.transactions) / Math.max(ok, 1);
      log(
        `replicas: ${kind.scenario}: ${round(statements)} statements, ${round(transactions)} transactions a request`,
      );
      figures.push({
        section: 'replicas',
        scenario: `what ${kind.scenario} costs the database`,
        figure: `${round(statements, 1)} statements (round trips), ${round(transactions, 1)} transactions`,
        target: { text: '(recorded)', met: null },
        details: { requests: ok, ...cost, background: quiet },
      });
    }
    return figures;
  } finally {
    await client.end();
  }
}
