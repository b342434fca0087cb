import { memoryOf, type Server, startCeiling, startHonoFloor, startSandbox } from './children.js';
import {
  api,
  combine,
  createAccount,
  createLabels,
  createShipments,
  headersFor,
  type LoadOptions,
  type LoadResult,
  round,
  runLoad,
  SHIPMENT_BODY,
} from './load.js';
import type { Options } from './options.js';
import type { FigureRow, LoadRow, Target } from './report.js';

type Log = (line: string) => void;
type Format = 'pdf' | 'png' | 'zpl';
type Item = { body?: string; path?: string };

interface Endpoint {
  scenario: string;
  method: 'GET' | 'POST';
  path: string;
  key: string | null;
  body?: string;
  /**
   * Requests that each need something of their own, from a pool made beforehand: `buy` buys a label
   * for a fresh shipment; `download` fetches a fresh label's file for the first time, so whichever
   * request renders the file (the purchase or the first download), the benchmark sees it render.
   */
  fresh?: { kind: 'buy' | 'download'; format: Format };
  note?: string;
  /**
   * `ratio`: of its requests a second to those of `versus` (the ceiling's without one); `p50`: its
   * median latency, in ms.
   */
  target?: { ratio?: number; p50?: number };
  /** What the row is judged against, measured in the same rounds (after the ceiling, before it). */
  versus?: Reference;
  /** Why the endpoint cannot be measured (its set-up failed). */
  unavailable?: string;
}

/** Another server's or endpoint's requests, measured beside an endpoint: its ratio's denominator. */
interface Reference {
  /** Short, for the table: `Hono floor`, `GET by id`. */
  name: string;
  /** The row the reference's own figures are reported as, if any (the floor's), and its note. */
  scenario?: string;
  note?: string;
  server: 'sandbox' | 'hono floor';
  method: 'GET' | 'POST';
  path: string;
  key: string | null;
  body?: string;
}

function judge(target: Endpoint['target'], against: string, ratio: number, p50: number): Target | undefined {
  if (!target) return undefined;
  if (target.ratio !== undefined)
    return {
      text: `÷ ${against} >= ${target.ratio}`,
      met: Number.isFinite(ratio) ? ratio >= target.ratio : null,
    };
  if (target.p50 !== undefined)
    return { text: `p50 < ${target.p50} ms`, met: Number.isFinite(p50) ? p50 < target.p50 : null };
  return undefined;
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

/**
 * Every endpoint against the sandbox and, beside it, against the ceiling: the same requests, the
 * same connections and duration, in rounds (ceiling, sandbox, ceiling, sandbox, …) so that drift on a
 * noisy machine hits both. An endpoint judged against something else (the bare Hono floor, or another
 * of the sandbox's endpoints) has that measured in each round too, between the two: its ratio is
 * within the round.
 */
export async function throughput(
  options: Options,
  log: Log,
): Promise<{ rows: LoadRow[]; figures: FigureRow[] }> {
  const { connections, duration, rounds } = options;
  const rows: LoadRow[] = [];
  const figures: FigureRow[] = [];
  const sandbox = await startSandbox(options.sandboxNodeArgs);
  let ceiling: Server | undefined;
  let honoFloor: Server | undefined;
  try {
    const base = sandbox.url;
    const idle = memoryOf(sandbox.pid);
    log(`throughput: sandbox ${base} (pid ${sandbox.pid}), idle RSS ${idle.rssMiB} MiB`);

    // The read account: 1,000 shipments, a label with a few days of tracking, a label to download.
    const readKey = await createAccount(base, 'bench-read');
    const writeKey = await createAccount(base, 'bench-write');
    const labelKey = await createAccount(base, 'bench-labels');
    const made = await createShipments(base, readKey, 1000, connections, { collectIds: true });
    const shipmentId = made.ids[0];
    if (!shipmentId || made.failures > 0) throw new Error(`could not create the read account's shipments`);
    const trackedShipment = made.ids[1] as string;
    const downloadShipment = made.ids[2] as string;
    // Labels made beforehand; should making one fail, only the endpoints that need it are lost.
    const setupError = (error: unknown) => (error as Error).message.split('\n')[0] ?? String(error);
    let trackingNumber: string | Error;
    try {
      const label = await api<{ tracking_number: string }>(base, readKey, 'POST', '/v1/labels', {
        shipment_id: trackedShipment,
        format: 'zpl',
      });
      await api(base, readKey, 'POST', '/_sandbox/clock/advance', { by: '2d' });
      trackingNumber = label.tracking_number;
    } catch (error) {
      trackingNumber = new Error(`setting up: ${setupError(error)}`);
    }
    let downloadId: string | Error;
    try {
      const label = await api<{ id: string }>(base, readKey, 'POST', '/v1/labels', {
        shipment_id: downloadShipment,
        format: 'pdf',
      });
      const first = await fetch(`${base}/v1/labels/${label.id}/download`, { headers: headersFor(readKey) });
      await first.arrayBuffer();
      if (first.status !== 200) throw new Error(`first download: ${first.status}`);
      downloadId = label.id;
    } catch (error) {
      downloadId = new Error(`setting up: ${setupError(error)}`);
    }
    // The ceiling answers the sandbox's own bytes for the shipment; the floor, those of a shipment
    // read and of one created.
    const shipmentJson = await fetch(`${base}/v1/shipments/${shipmentId}`, {
      headers: headersFor(readKey),
    }).then((r) => r.text());
    const createdJson = await fetch(`${base}/v1/shipments`, {
      method: 'POST',
      headers: headersFor(writeKey),
      body: SHIPMENT_BODY,
    }).then((r) => r.text());
    ceiling = await startCeiling(shipmentJson);
    log(`throughput: ceiling ${ceiling.url} (pid ${ceiling.pid}), body ${shipmentJson.length} bytes`);
    honoFloor = await startHonoFloor(shipmentJson, createdJson);
    log(`throughput: Hono floor ${honoFloor.url} (pid ${honoFloor.pid})`);

    const labelTargets: Partial<Record<Format, number>> = { pdf: 10, png: 30 };
    const getById = { method: 'GET', path: `/v1/shipments/${shipmentId}`, key: readKey } as const;
    const endpoints: Endpoint[] = [
      {
        scenario: 'GET /v1/shipments/:id',
        ...getById,
        versus: {
          name: 'Hono floor',
          scenario: 'GET /v1/shipments/:id on the bare Hono floor',
          note: 'no middleware, no database',
          server: 'hono floor',
          ...getById,
        },
        target: { ratio: 0.5 },
      },
      {
        scenario: 'GET /v1/shipments?limit=20',
        method: 'GET',
        path: '/v1/shipments?limit=20',
        key: readKey,
        note: '1,000 in the account',
        versus: { name: 'GET by id', server: 'sandbox', ...getById },
        target: { ratio: 0.6 },
      },
      {
        scenario: 'POST /v1/shipments',
        method: 'POST',
        path: '/v1/shipments',
        key: writeKey,
        body: SHIPMENT_BODY,
        versus: {
          name: 'Hono floor',
          scenario: 'POST /v1/shipments on the bare Hono floor',
          note: 'reads the JSON body; no middleware, no database',
          server: 'hono floor',
          method: 'POST',
          path: '/v1/shipments',
          key: writeKey,
          body: SHIPMENT_BODY,
        },
        target: { ratio: 0.15 },
      },
      ...(['pdf', 'png', 'zpl'] as const).map(
        (format): Endpoint => ({
          scenario: `POST /v1/labels ${format}`,
          method: 'POST',
          path: '/v1/labels',
          key: labelKey,
          fresh: { kind: 'buy', format },
          note: 'a fresh shipment each',
          ...(labelTargets[format] ? { target: { p50: labelTargets[format] } } : {}),
        }),
      ),
      ...(['pdf', 'png', 'zpl'] as const).map(
        (format): Endpoint => ({
          scenario: `GET /v1/labels/:id/download ${format}, first download`,
          method: 'GET',
          path: '/v1/labels/-/download',
          key: labelKey,
          fresh: { kind: 'download', format },
          note: 'a fresh label each',
          ...(labelTargets[format] ? { target: { p50: labelTargets[format] } } : {}),
        }),
      ),
      {
        scenario: 'GET /v1/labels/:id/download pdf, again',
        method: 'GET',
        path: `/v1/labels/${downloadId instanceof Error ? '-' : downloadId}/download`,
        key: readKey,
        note: 'one label, from the file cache',
        ...(downloadId instanceof Error ? { unavailable: downloadId.message } : {}),
      },
      {
        scenario: 'GET /v1/tracking/:n',
        method: 'GET',
        path: `/v1/tracking/${trackingNumber instanceof Error ? '-' : trackingNumber}`,
        key: readKey,
        note: 'zpl label, 2 days of events',
        ...(trackingNumber instanceof Error ? { unavailable: trackingNumber.message } : {}),
      },
      {
        scenario: 'GET /healthz',
        method: 'GET',
        path: '/healthz',
        key: null,
        note: 'no key, no middleware',
      },
    ];

    // A pool is sized for the run at 2.5 times the warm-up's rate, within a cap (a pool costs
    // set-up time); when one runs out, its run stops there and says so.
    const poolCap = options.quick ? 2_000 : 10_000;
    // A quick run leaves out the ZPL label rows (no target, and their pools cost seconds).
    const toMeasure = options.quick ? endpoints.filter((e) => e.fresh?.format !== 'zpl') : endpoints;
    for (const endpoint of toMeasure) {
      // One endpoint failing (a 500 where a label was expected) costs its own row, not the others'.
      try {
        if (endpoint.unavailable) throw new Error(endpoint.unavailable);
        const versus = endpoint.versus;
        const referenceServer = versus?.server === 'hono floor' ? (honoFloor as Server) : sandbox;
        const load = async (
          server: Server,
          extra: Partial<LoadOptions>,
          request: Pick<Endpoint, 'method' | 'path' | 'key' | 'body'> = endpoint,
        ) => {
          const result = await runLoad({
            url: server.url,
            path: request.path,
            method: request.method,
            headers: request.key ? headersFor(request.key) : {},
            connections,
            serverPid: server.pid,
            alive: server.assertAlive,
            ...(request.body === undefined ? {} : { body: request.body }),
            ...extra,
          });
          if (result.ok === 0)
            throw new Error(
              `${server.name}: no 2xx answer (status codes ${JSON.stringify(result.statusCodes)})`,
            );
          return result;
        };

        const fresh = endpoint.fresh;
        const pool = async (count: number): Promise<() => Item | undefined> => {
          sandbox.assertAlive();
          if (!fresh) throw new Error('no pool');
          const shipments = await createShipments(base, labelKey, Math.min(count, poolCap), connections, {
            collectIds: true,
          });
          let items: Item[];
          if (fresh.kind === 'buy') {
            items = shipments.ids.map((id) => ({
              body: JSON.stringify({ shipment_id: id, format: fresh.format }),
            }));
          } else {
            const labels = await createLabels(base, labelKey, shipments.ids, fresh.format, connections);
            if (labels.failures > 0) throw new Error(`${labels.failures} labels of the pool failed`);
            items = labels.ids.map((id) => ({ path: `/v1/labels/${id}/download` }));
          }
          return () => items.pop();
        };
        // The ceiling gets the same kind of requests, with made-up ids.
        const fake = (): (() => Item) => {
          let n = 0;
          return () =>
            fresh?.kind === 'download'
              ? { path: `/v1/labels/lbl_ceiling${n++}/download` }
              : { body: JSON.stringify({ shipment_id: `shp_ceiling${n++}`, format: fresh?.format }) };
        };

        // Warm-up, not recorded: JIT, lazily loaded renderers, connection set-up.
        let estimate = 0;
        if (fresh) {
          const warm = options.quick ? 30 : 60;
          const w = await load(sandbox, { amount: warm, next: await pool(warm) });
          // The warm-up's first renders load the renderer, so its rate understates; its median latency
          // (connections / p50, Little's law) does not.
          const fromLatency = (connections / w.p50) * 1000;
          estimate = Math.max(w.rps, Number.isFinite(fromLatency) ? fromLatency : 0);
          await load(ceiling, { amount: 200, next: fake() });
        } else {
          const warm = options.quick ? 300 : 1000;
          await load(sandbox, { amount: warm });
          await load(ceiling, { amount: warm });
          if (versus) await load(referenceServer, { amount: warm }, versus);
        }
        const poolFor = (seconds: number) =>
          pool(Math.ceil(Math.max(estimate, 50) * seconds * 2.5) + 2 * connections);

        const sandboxRuns: LoadResult[] = [];
        const ceilingRuns: LoadResult[] = [];
        const referenceRuns: LoadResult[] = [];
        const pairRatios: number[] = [];
        const referenceRatios: number[] = [];
        const referenceCeilingRatios: number[] = [];
        for (let round_ = 0; round_ < rounds; round_++) {
          const c = await load(ceiling, { duration, ...(fresh ? { next: fake() } : {}) });
          const r = versus ? await load(referenceServer, { duration }, versus) : undefined;
          const s = await load(sandbox, {
            duration,
            ...(fresh ? { next: await poolFor(duration) } : {}),
          });
          ceilingRuns.push(c);
          sandboxRuns.push(s);
          pairRatios.push(round(s.rps / c.rps, 3));
          if (r) {
            referenceRuns.push(r);
            referenceRatios.push(round(s.rps / r.rps, 3));
            referenceCeilingRatios.push(round(r.rps / c.rps, 3));
          }
          log(
            `  ${endpoint.scenario}: ceiling ${c.rps} rps p50 ${c.p50} p99 ${c.p99}` +
              (r ? ` | ${versus?.name} ${r.rps} rps p50 ${r.p50} p99 ${r.p99}` : '') +
              ` | sandbox ${s.rps} rps p50 ${s.p50} p99 ${s.p99}` +
              `${s.non2xx + s.errors ? ` (${s.non2xx} non-2xx, ${s.errors} errors)` : ''}` +
              `${s.stoppedEarly ? ` (pool ran out after ${s.seconds} s)` : ''} | cpu server ${s.serverCpuPct}% ` +
              `loadgen ${s.loadGenCpuPct}%`,
          );
        }
        const sandboxFigures = combine(sandboxRuns);
        const ceilingFigures = combine(ceilingRuns);
        const ratio = round(mean(pairRatios), 3);
        const referenceRatio = versus ? round(mean(referenceRatios), 3) : undefined;
        const failures = sandboxRuns.reduce((n, r) => n + r.non2xx + r.errors, 0);
        const notes = [endpoint.note, failures ? `${failures} failed requests` : undefined].filter(Boolean);
        if (sandboxRuns.some((r) => r.stoppedEarly)) notes.push('pool ran out early');
        const target = judge(
          endpoint.target,
          versus?.name ?? 'ceiling',
          referenceRatio ?? ratio,
          sandboxFigures.p50,
        );
        rows.push({
          section: 'throughput',
          scenario: endpoint.scenario,
          connections,
          sandbox: sandboxFigures,
          ceiling: ceilingFigures,
          ratio,
          pairRatios,
          ...(versus && referenceRatio !== undefined
            ? {
                reference: { name: versus.name, ...combine(referenceRuns) },
                referenceRatio,
                referencePairRatios: referenceRatios,
              }
            : {}),
          ...(target ? { target } : {}),
          ...(notes.length ? { note: notes.join('; ') } : {}),
          runs: {
            sandbox: sandboxRuns,
            ceiling: ceilingRuns,
            ...(versus ? { reference: referenceRuns } : {}),
          },
        });
        // The floor's own row, from the same rounds: what the framework alone reaches beside the ceiling.
        if (versus?.scenario) {
          rows.push({
            section: 'throughput',
            scenario: versus.scenario,
            connections,
            sandbox: combine(referenceRuns),
            ceiling: ceilingFigures,
            ratio: round(mean(referenceCeilingRatios), 3),
            pairRatios: referenceCeilingRatios,
            ...(versus.note ? { note: versus.note } : {}),
            runs: { sandbox: referenceRuns, ceiling: ceilingRuns },
          });
        }

        // The same with one connection: the request's own time, without queueing (full runs).
        if (fresh && !options.quick) {
          const serialSeconds = duration / 2;
          const s = await load(sandbox, {
            duration: serialSeconds,
            connections: 1,
            next: await poolFor(serialSeconds),
          });
          log(`  ${endpoint.scenario}, 1 connection: ${s.rps} rps p50 ${s.p50} p99 ${s.p99}`);
          const serialTarget = judge(endpoint.target, 'ceiling', Number.NaN, s.p50);
          rows.push({
            section: 'throughput',
            scenario: `${endpoint.scenario}, 1 connection`,
            connections: 1,
            sandbox: { rps: s.rps, p50: s.p50, p99: s.p99 },
            ...(serialTarget ? { target: { ...serialTarget, text: `(${serialTarget.text})` } } : {}),
            note: 'no queueing',
            runs: { sandbox: [s], ceiling: [] },
          });
        }
      } catch (error) {
        sandbox.assertAlive();
        ceiling.assertAlive();
        honoFloor.assertAlive();
        const message = (error as Error).message.split('\n')[0] ?? String(error);
        log(`  ${endpoint.scenario}: FAILED ${message}`);
        rows.push({
          section: 'throughput',
          scenario: endpoint.scenario,
          connections,
          sandbox: { rps: Number.NaN, p50: Number.NaN, p99: Number.NaN },
          note: `FAILED: ${message.slice(0, 120)}`,
          target: { text: 'runs', met: false },
        });
      }
    }

    const after = memoryOf(sandbox.pid);
    figures.push({
      section: 'throughput',
      scenario: 'sandbox resident memory, idle after start',
      figure: `${idle.rssMiB} MiB`,
    });
    figures.push({
      section: 'throughput',
      scenario: 'sandbox resident memory after the throughput runs',
      figure: `${after.rssMiB} MiB (peak ${after.peakRssMiB} MiB)`,
      details: { ...after },
    });
    return { rows, figures };
  } finally {
    await ceiling?.stop();
    await honoFloor?.stop();
    await sandbox.stop();
  }
}
