import { databaseFilesMiB, memoryOf, type Storage, startSandbox } from './children.js';
import { createAccount, createLabels, createShipments, round } from './load.js';
import type { Options } from './options.js';
import type { FigureRow } from './report.js';

type Log = (line: string) => void;

/** The issue's target: resident memory after 50,000 labels, in both modes. */
const MEMORY_LIMIT_MIB = 300;
const TARGET_LABELS = 50_000;
/**
 * The cheapest to render, so that the run measures what a label keeps (its row, its shipment, its
 * pending tracking) rather than how fast files are made; rendered files live in a bounded cache.
 */
const FORMAT = 'zpl';

const MODE: Record<Storage, string> = { file: 'file mode', memory: '--memory' };

/**
 * Resident memory after many labels bought through the API (50,000; 500 in quick mode, not judged),
 * each for a shipment of its own, in one account, in file mode and with `--memory`. The account's
 * clock runs as in real use (at the wall clock's speed, neither frozen nor advanced): each label's
 * first tracking step happens when it is bought, and the later ones, hours and days away, stay
 * pending. Whatever a label keeps until then is what this measures.
 */
export async function labelMemory(options: Options, log: Log): Promise<FigureRow[]> {
  const figures: FigureRow[] = [];
  for (const storage of ['file', 'memory'] as const) figures.push(...(await labelsIn(storage, options, log)));
  return figures;
}

async function labelsIn(storage: Storage, options: Options, log: Log): Promise<FigureRow[]> {
  const mode = MODE[storage];
  const count = options.labelCount;
  const full = count >= TARGET_LABELS;
  const n = count.toLocaleString('en-US');
  const sandbox = await startSandbox(options.sandboxNodeArgs, { storage });
  try {
    const base = sandbox.url;
    const key = await createAccount(base, 'bench-label-memory');
    const idle = memoryOf(sandbox.pid);
    // In slices, so that the shipment ids held here stay few and the sandbox's growth shows.
    const slices = 10;
    let made = 0;
    let failures = 0;
    let seconds = 0;
    for (let slice = 0; slice < slices; slice++) {
      const size = Math.floor(count / slices) + (slice < count % slices ? 1 : 0);
      const shipments = await createShipments(base, key, size, options.connections, { collectIds: true });
      const labels = await createLabels(base, key, shipments.ids, FORMAT, options.connections);
      sandbox.assertAlive();
      made += labels.ids.length;
      failures += shipments.failures + labels.failures;
      seconds += shipments.seconds + labels.seconds;
    }
    const after = memoryOf(sandbox.pid);
    const files = sandbox.dataDir === undefined ? null : databaseFilesMiB(sandbox.dataDir);
    log(
      `labels (${mode}): ${made} ${FORMAT} labels (and their shipments) in ${round(seconds, 1)} s, ` +
        `RSS ${after.rssMiB} MiB (peak ${after.peakRssMiB} MiB, idle ${idle.rssMiB} MiB)` +
        (files === null ? '' : `; database and WAL files ${files} MiB`),
    );
    if (made !== count) throw new Error(`bought ${made} of ${count} labels (${failures} failed requests)`);
    const target = `< ${MEMORY_LIMIT_MIB} MiB`;
    return [
      {
        section: 'labels',
        scenario: `resident memory after ${n} ${FORMAT} labels bought through the API, ${mode} (clock running, tracking pending)`,
        figure:
          `${after.rssMiB} MiB (peak ${after.peakRssMiB} MiB; idle ${idle.rssMiB} MiB` +
          `${files === null ? '' : `; database and WAL files ${files} MiB`}; ${round(seconds, 1)} s to buy them)`,
        target: full
          ? { text: target, met: after.rssMiB === null ? null : after.rssMiB < MEMORY_LIMIT_MIB }
          : { text: `${target} at 50,000: not judged`, met: null },
        details: {
          storage,
          format: FORMAT,
          labels: made,
          seconds: round(seconds, 2),
          idle,
          after,
          databaseFileMiB: files,
        },
      },
    ];
  } finally {
    await sandbox.stop();
  }
}
