import { databaseFilesMiB, memoryOf, type Storage, startSandbox } from './children.js';
import { createAccount, createShipments, headersFor, percentile, round, runLoad } from './load.js';
import type { Options } from './options.js';
import type { FigureRow, LoadRow } from './report.js';

type Log = (line: string) => void;

/** The file mode's target is 200 MB (decimal); figures are in MiB, so compare against 190.7 MiB. */
const MEMORY_LIMIT_MB = 200;
const MEMORY_LIMIT_MIB = (MEMORY_LIMIT_MB * 1e6) / 2 ** 20;
/** Issue 17 sets `--memory`'s own: 200 MiB. */
const MEMORY_MODE_LIMIT_MIB = 200;
const LIST_P99_MS = 20;
/** The targets speak of 100,000 shipments; with fewer (quick mode) they are shown but not judged. */
const TARGET_SHIPMENTS = 100_000;

/** How each mode is named in the report. */
const MODE: Record<Storage, string> = { file: 'file mode', memory: '--memory' };

/**
 * One account with many shipments (100,000; 3,000 in quick mode), inserted through the API: the
 * list's latency, paging to the end with the cursor, and the server's resident memory. Run twice:
 * in the default file mode (a database file in a fresh data directory), where the targets are
 * judged, and with `--memory` (the whole database inside the process), shown beside it, where only
 * the memory is judged (issue 17). Quick runs
 * measure only the inserts and the memory with `--memory`, to stay under a minute.
 */
export async function scale(options: Options, log: Log): Promise<{ rows: LoadRow[]; figures: FigureRow[] }> {
  const rows: LoadRow[] = [];
  const figures: FigureRow[] = [];
  for (const storage of ['file', 'memory'] as const) {
    const result = await scaleIn(storage, options, log);
    rows.push(...result.rows);
    figures.push(...result.figures);
  }
  return { rows, figures };
}

async function scaleIn(
  storage: Storage,
  options: Options,
  log: Log,
): Promise<{ rows: LoadRow[]; figures: FigureRow[] }> {
  const { connections, duration } = options;
  const rows: LoadRow[] = [];
  const figures: FigureRow[] = [];
  const mode = MODE[storage];
  const sandbox = await startSandbox(options.sandboxNodeArgs, { storage });
  try {
    const base = sandbox.url;
    const key = await createAccount(base, 'bench-scale');
    const idle = memoryOf(sandbox.pid);
    const full = options.scaleShipments >= TARGET_SHIPMENTS;
    // Targets are judged in the default mode; `--memory` shows whether it meets them, in parentheses
    // (not counted in the summary).
    const judged = (text: string, met: boolean | null) => {
      if (!full) return { text: `${text} at 100,000: not judged`, met: null };
      return storage === 'file' ? { text, met } : { text: `(${text})`, met };
    };

    // Inserted in ten slices, to see whether creating gets slower as the table grows.
    const total = options.scaleShipments;
    const slices: { upTo: number; rps: number }[] = [];
    let seconds = 0;
    let failures = 0;
    let upTo = 0;
    for (let slice = 0; slice < 10; slice++) {
      const count = Math.floor(total / 10) + (slice < total % 10 ? 1 : 0);
      const made = await createShipments(base, key, count, connections, { unique: true });
      sandbox.assertAlive();
      seconds += made.seconds;
      failures += made.failures;
      upTo += count;
      slices.push({ upTo, rps: made.rps });
    }
    const afterInsert = memoryOf(sandbox.pid);
    const n = total.toLocaleString('en-US');
    log(
      `scale (${mode}): ${total} shipments in ${round(seconds, 1)} s (${round(total / seconds, 0)}/s; by tenths ` +
        `${slices.map((s) => Math.round(s.rps)).join(', ')}/s), RSS ${afterInsert.rssMiB} MiB`,
    );
    figures.push({
      section: 'scale',
      scenario: `insert ${total.toLocaleString('en-US')} shipments via POST /v1/shipments (${connections} connections), ${mode}`,
      figure: `${round(seconds, 1)} s, ${Math.round(total / seconds)}/s (first tenth ${Math.round(slices[0]?.rps ?? 0)}/s, last ${Math.round(slices[9]?.rps ?? 0)}/s)`,
      details: { storage, seconds: round(seconds, 2), failures, slices },
    });

    // The list and paging: both modes in a full run, the default one only in a quick run.
    const listed = !options.quick || storage === 'file';
    if (listed) {
      const list = async (conns: number, secs: number) =>
        runLoad({
          url: base,
          path: '/v1/shipments?limit=20',
          headers: headersFor(key),
          connections: conns,
          duration: secs,
          serverPid: sandbox.pid,
          alive: sandbox.assertAlive,
        });
      await runLoad({
        url: base,
        path: '/v1/shipments?limit=20',
        headers: headersFor(key),
        connections,
        amount: 200,
      });
      const loaded = await list(connections, duration);
      const serial = await list(1, Math.max(1, duration / 2));
      log(
        `scale (${mode}): list of 20, ${connections} connections: ${loaded.rps} rps p50 ${loaded.p50} p99 ${loaded.p99}`,
      );
      log(`scale (${mode}): list of 20, 1 connection: ${serial.rps} rps p50 ${serial.p50} p99 ${serial.p99}`);
      rows.push({
        section: 'scale',
        scenario: `GET /v1/shipments?limit=20, ${n} in the account, ${mode}`,
        connections,
        sandbox: { rps: loaded.rps, p50: loaded.p50, p99: loaded.p99 },
        target: judged(`p99 < ${LIST_P99_MS} ms`, loaded.p99 < LIST_P99_MS),
        ...(loaded.non2xx + loaded.errors ? { note: `${loaded.non2xx + loaded.errors} failed` } : {}),
        runs: { sandbox: [loaded], ceiling: [] },
      });
      rows.push({
        section: 'scale',
        scenario: `GET /v1/shipments?limit=20, ${n} in the account, ${mode}, 1 connection`,
        connections: 1,
        sandbox: { rps: serial.rps, p50: serial.p50, p99: serial.p99 },
        target: full
          ? { text: `(p99 < ${LIST_P99_MS} ms)`, met: serial.p99 < LIST_P99_MS }
          : { text: '(not judged)', met: null },
        runs: { sandbox: [serial], ceiling: [] },
      });

      // Every page, 100 at a time, following the cursor to the end (one request at a time).
      const pages: number[] = [];
      let cursor: string | null = null;
      let seen = 0;
      const walkStarted = performance.now();
      do {
        const started = performance.now();
        const query: string = cursor ? `limit=100&cursor=${encodeURIComponent(cursor)}` : 'limit=100';
        const response = await fetch(`${base}/v1/shipments?${query}`, { headers: headersFor(key) });
        const page = (await response.json()) as {
          data: unknown[];
          meta: { cursor: string | null; has_more: boolean };
        };
        pages.push(performance.now() - started);
        if (response.status !== 200) throw new Error(`paging: ${response.status}`);
        seen += page.data.length;
        cursor = page.meta.has_more ? page.meta.cursor : null;
      } while (cursor);
      const walkSeconds = (performance.now() - walkStarted) / 1000;
      const sortedPages = Float64Array.from(pages).sort();
      const paging = {
        pages: pages.length,
        shipments: seen,
        seconds: round(walkSeconds, 2),
        p50: round(percentile(sortedPages, 50), 2),
        p99: round(percentile(sortedPages, 99), 2),
        firstPageMs: round(pages[0] ?? Number.NaN, 2),
        lastPageMs: round(pages[pages.length - 1] ?? Number.NaN, 2),
      };
      log(
        `scale (${mode}): paged ${seen} shipments in ${paging.pages} pages of 100: p50 ${paging.p50} p99 ${paging.p99} ms`,
      );
      figures.push({
        section: 'scale',
        scenario: `page through all ${n} with the cursor, limit=100 (1 connection), ${mode}`,
        figure: `${paging.pages} pages in ${paging.seconds} s; page p50 ${paging.p50} ms, p99 ${paging.p99} ms (first ${paging.firstPageMs}, last ${paging.lastPageMs})`,
        details: { storage, ...paging },
      });
    }

    const afterList = memoryOf(sandbox.pid);
    const rss = Math.max(afterInsert.rssMiB ?? 0, afterList.rssMiB ?? 0);
    const files = sandbox.dataDir === undefined ? null : databaseFilesMiB(sandbox.dataDir);
    log(
      `scale (${mode}): RSS ${listed ? 'after the list runs ' : ''}${afterList.rssMiB} MiB (peak ${afterList.peakRssMiB} MiB)` +
        (files === null ? '' : `; database and WAL files ${files} MiB`),
    );
    const limitMiB = storage === 'file' ? MEMORY_LIMIT_MIB : MEMORY_MODE_LIMIT_MIB;
    const under = afterList.rssMiB === null ? null : rss < limitMiB;
    const limitText =
      storage === 'file'
        ? `< ${MEMORY_LIMIT_MB} MB (${round(MEMORY_LIMIT_MIB, 1)} MiB)`
        : `< ${MEMORY_MODE_LIMIT_MIB} MiB`;
    figures.push({
      section: 'scale',
      scenario: `resident memory with ${n} shipments, ${mode} (after inserting${listed ? '; after the list runs' : ''})`,
      figure:
        `${afterInsert.rssMiB} MiB${listed ? `; ${afterList.rssMiB} MiB` : ''} (peak ${afterList.peakRssMiB} MiB; idle ${idle.rssMiB} MiB` +
        `${files === null ? '' : `; database and WAL files ${files} MiB`})`,
      // Judged in both modes: `--memory`'s is a target of its own.
      target: full ? { text: limitText, met: under } : judged(limitText, under),
      details: { storage, idle, afterInsert, afterList, databaseFileMiB: files },
    });
    return { rows, figures };
  } finally {
    await sandbox.stop();
  }
}
