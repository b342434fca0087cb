import { type PostgresServer, startPostgresServer } from '../scripts/embedded-postgres.js';
import { memoryOf, type Server, startSandbox } from './children.js';
import {
  createAccount,
  createShipments,
  headersFor,
  type LoadResult,
  round,
  runLoad,
  SHIPMENT_BODY,
} from './load.js';
import type { Options } from './options.js';
import type { FigureRow, LoadRow } from './report.js';

type Log = (line: string) => void;

/** Issue 24's targets: over PostgreSQL, these shares of the same process over SQLite, and this memory. */
const GET_RATIO = 0.5;
const POST_RATIO = 0.35;
const MEMORY_LIMIT_MIB = 150;
const TARGET_SHIPMENTS = 100_000;

/**
 * One sandbox over PostgreSQL beside the same sandbox over SQLite (its default file mode), in one run:
 * a PostgreSQL server started on this machine (scripts/embedded-postgres.ts, the tests' own), the
 * same requests to both in alternating rounds, each endpoint judged as the PostgreSQL sandbox's share
 * of the SQLite one's requests a second. Then the PostgreSQL sandbox's resident memory with 100,000
 * shipments in its account (the scale section's count; 3,000 in a quick run).
 */
export async function postgres(
  options: Options,
  log: Log,
): Promise<{ rows: LoadRow[]; figures: FigureRow[] }> {
  const rows: LoadRow[] = [];
  const figures: FigureRow[] = [];
  const { connections, duration, rounds } = options;
  let server: PostgresServer | undefined;
  let sqlite: Server | undefined;
  let pg: Server | undefined;
  try {
    server = await startPostgresServer();
    log(`postgres: server on port ${server.port}`);
    sqlite = await startSandbox(options.sandboxNodeArgs, { storage: 'file' });
    pg = await startSandbox(options.sandboxNodeArgs, { database: server.url });
    const sides = await Promise.all(
      [sqlite, pg].map(async (sandbox) => {
        const readKey = await createAccount(sandbox.url, 'bench-read');
        const writeKey = await createAccount(sandbox.url, 'bench-write');
        const made = await createShipments(sandbox.url, readKey, 1000, connections, { collectIds: true });
        if (made.failures > 0 || !made.ids[0]) throw new Error(`${sandbox.name}: could not create shipments`);
        return { sandbox, readKey, writeKey, shipmentId: made.ids[0] };
      }),
    );
    const [onSqlite, onPostgres] = sides as [(typeof sides)[number], (typeof sides)[number]];

    const endpoints = [
      {
        scenario: 'GET /v1/shipments/:id',
        target: GET_RATIO,
        request: (side: typeof onSqlite) => ({
          path: `/v1/shipments/${side.shipmentId}`,
          method: 'GET' as const,
          key: side.readKey,
        }),
      },
      {
        scenario: 'POST /v1/shipments',
        target: POST_RATIO,
        request: (side: typeof onSqlite) => ({
          path: '/v1/shipments',
          method: 'POST' as const,
          key: side.writeKey,
          body: SHIPMENT_BODY,
        }),
      },
    ];
    for (const endpoint of endpoints) {
      const load = (side: typeof onSqlite, extra: { duration?: number; amount?: number }) => {
        const request = endpoint.request(side);
        return runLoad({
          url: side.sandbox.url,
          path: request.path,
          method: request.method,
          headers: headersFor(request.key),
          connections,
          serverPid: side.sandbox.pid,
          alive: side.sandbox.assertAlive,
          ...('body' in request ? { body: request.body } : {}),
          ...extra,
        });
      };
      // Warm-up, not recorded.
      for (const side of sides) await load(side, { amount: 500 });
      const runs: { sqlite: LoadResult; postgres: LoadResult }[] = [];
      for (let round = 0; round < rounds; round++) {
        const onLite = await load(onSqlite, { duration });
        const onPg = await load(onPostgres, { duration });
        runs.push({ sqlite: onLite, postgres: onPg });
      }
      const ratios = runs.map((run) => run.postgres.rps / run.sqlite.rps);
      const ratio = ratios.reduce((a, b) => a + b, 0) / ratios.length;
      const mean = (pick: (run: (typeof runs)[number]) => number) =>
        runs.reduce((sum, run) => sum + pick(run), 0) / runs.length;
      log(
        `postgres: ${endpoint.scenario}: PostgreSQL ${Math.round(mean((r) => r.postgres.rps))} rps, ` +
          `SQLite ${Math.round(mean((r) => r.sqlite.rps))} rps, ratio ${round(ratio)}`,
      );
      rows.push({
        section: 'postgres',
        scenario: `${endpoint.scenario}, over PostgreSQL`,
        connections,
        sandbox: {
          rps: mean((r) => r.postgres.rps),
          p50: mean((r) => r.postgres.p50),
          p99: mean((r) => r.postgres.p99),
        },
        reference: {
          name: 'over SQLite',
          rps: mean((r) => r.sqlite.rps),
          p50: mean((r) => r.sqlite.p50),
          p99: mean((r) => r.sqlite.p99),
        },
        referenceRatio: ratio,
        referencePairRatios: ratios,
        target: { text: `÷ over SQLite >= ${endpoint.target}`, met: ratio >= endpoint.target },
        note: 'PostgreSQL on this machine; the SQLite sandbox in its default file mode',
      });
    }

    // Memory with many shipments in the account (as the scale section counts them).
    const key = await createAccount(pg.url, 'bench-scale');
    const total = options.scaleShipments;
    const made = await createShipments(pg.url, key, total, connections, { unique: true });
    pg.assertAlive();
    const memory = memoryOf(pg.pid);
    const full = total >= TARGET_SHIPMENTS;
    log(
      `postgres: ${total} shipments in ${round(made.seconds, 1)} s (${Math.round(made.rps)}/s), RSS ${memory.rssMiB} MiB`,
    );
    figures.push({
      section: 'postgres',
      scenario: `resident memory with ${total.toLocaleString('en-US')} shipments in the account, over PostgreSQL`,
      figure: `${memory.rssMiB} MiB (inserted at ${Math.round(made.rps)}/s)`,
      target: full
        ? {
            text: `< ${MEMORY_LIMIT_MIB} MiB`,
            met: (memory.rssMiB ?? Number.POSITIVE_INFINITY) < MEMORY_LIMIT_MIB,
          }
        : { text: `< ${MEMORY_LIMIT_MIB} MiB at 100,000: not judged`, met: null },
      details: { shipments: total, failures: made.failures, ...memory },
    });
  } finally {
    await pg?.stop();
    await sqlite?.stop();
    await server?.stop();
  }
  return { rows, figures };
}
