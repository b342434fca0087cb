import { startSandbox } from './children.js';
import { api, createAccount, createLabels, createShipments, round } from './load.js';
import type { Options } from './options.js';
import type { FigureRow } from './report.js';

type Log = (line: string) => void;

interface Scenario {
  name: string;
  steps: unknown[];
}

/**
 * `POST /_sandbox/clock/advance` over 10,000 due scenario steps (2,000 in quick mode): labels on a
 * frozen clock, each playing `standard` (its first step runs when the label is made, the rest wait),
 * then one advance of 30 days, timed.
 */
export async function clockAdvance(options: Options, log: Log): Promise<FigureRow[]> {
  const sandbox = await startSandbox(options.sandboxNodeArgs);
  try {
    const base = sandbox.url;
    const key = await createAccount(base, 'bench-clock');
    await api(base, key, 'POST', '/_sandbox/clock', { frozen: true });
    const scenarios = await api<{ data: Scenario[] }>(base, key, 'GET', '/_sandbox/scenarios');
    const standard = scenarios.data.find((s) => s.name === 'standard');
    if (!standard) throw new Error('no standard scenario');
    const pendingPerLabel = standard.steps.length - 1;
    const labelCount = Math.ceil(options.clockSteps / pendingPerLabel);

    const shipments = await createShipments(base, key, labelCount, options.connections, { collectIds: true });
    // ZPL: the quickest label to render; the file plays no part in the advance.
    const labels = await createLabels(base, key, shipments.ids, 'zpl', options.connections);
    if (labels.ids.length !== labelCount)
      throw new Error(`made ${labels.ids.length} of ${labelCount} labels`);
    log(
      `clock: ${labelCount} zpl labels in ${labels.seconds} s, ${labelCount * pendingPerLabel} steps pending`,
    );

    const started = performance.now();
    const advanced = await api<{ ran: { kind: string; error?: string }[] }>(
      base,
      key,
      'POST',
      '/_sandbox/clock/advance',
      { by: '30d' },
    );
    const ms = performance.now() - started;
    const steps = advanced.ran.filter((job) => job.kind === 'tracking.step').length;
    const errors = advanced.ran.filter((job) => job.error !== undefined).length;
    log(`clock: advance ran ${advanced.ran.length} jobs (${steps} steps) in ${round(ms, 0)} ms`);
    return [
      {
        section: 'clock',
        scenario: `POST /_sandbox/clock/advance {"by":"30d"} over ${(labelCount * pendingPerLabel).toLocaleString('en-US')} due steps (${labelCount} labels)`,
        figure: `${round(ms, 0)} ms for ${steps} steps, ${Math.round(steps / (ms / 1000))} steps/s${errors ? `, ${errors} errors` : ''}`,
        details: {
          ms: round(ms, 1),
          steps,
          jobs: advanced.ran.length,
          errors,
          labels: labelCount,
          pendingPerLabel,
          labelSeconds: labels.seconds,
        },
      },
    ];
  } finally {
    await sandbox.stop();
  }
}
