import { describe, expect, it } from 'vitest';
import { summarize } from '../bench/cpuprofile.js';
import { parseOptions, SECTIONS } from '../bench/options.js';
import { type LoadRow, loadTable } from '../bench/report.js';

/** The benchmark's own logic (not its figures): where a report goes, and how a row reads. */
const identity = { date: new Date('2026-11-24T12:00:00Z'), commit: 'abc1234', dirty: false };
const parse = (...argv: string[]) => parseOptions(argv, {}, identity);

describe('where the benchmark writes its report', () => {
  it('keeps a full run of every section as a record named by its date and commit, and as latest.json', () => {
    expect(parse()).toMatchObject({
      record: true,
      out: ['bench/results/2026-11-24-abc1234.json', 'bench/results/latest.json'],
    });
    expect(parseOptions([], {}, { ...identity, dirty: true })?.out[0]).toBe(
      'bench/results/2026-11-24-abc1234-dirty.json',
    );
  });

  it('writes a quick, partial, reset or profiled run to the scratch folder that git ignores', () => {
    for (const argv of [
      ['--quick'],
      ['--only', 'throughput'],
      ['--duration', '5'],
      ['--rounds', '3'],
      ['--connections', '1'],
      ['--sandbox-node-arg=--cpu-prof'],
    ]) {
      expect(parse(...argv), argv.join(' ')).toMatchObject({
        record: false,
        out: ['bench/results/scratch/latest.json'],
      });
    }
    // npm keeps `npm run bench --quick` as its own setting.
    expect(parseOptions([], { npm_config_quick: 'true' }, identity)?.record).toBe(false);
  });

  it('writes where --out says, and only there', () => {
    expect(parse('--out', '/tmp/run.json')).toMatchObject({ record: false, out: ['/tmp/run.json'] });
  });

  it('runs every section by default, the label memory among them, with smaller counts in quick mode', () => {
    expect([...(parse()?.only ?? [])]).toEqual([...SECTIONS]);
    expect(SECTIONS).toContain('labels');
    expect(parse()).toMatchObject({ labelCount: 50_000, scaleShipments: 100_000, duration: 10, rounds: 2 });
    expect(parse('--quick')).toMatchObject({
      labelCount: 500,
      scaleShipments: 3_000,
      duration: 1,
      rounds: 1,
    });
  });
});

describe('a row of the load table', () => {
  const row: LoadRow = {
    section: 'throughput',
    scenario: 'POST /v1/shipments',
    connections: 10,
    sandbox: { rps: 3000, p50: 2.8, p99: 7.1 },
    ceiling: { rps: 27000, p50: 0.3, p99: 1 },
    ratio: 0.111,
    reference: { name: 'Hono floor', rps: 7500, p50: 1.1, p99: 3 },
    referenceRatio: 0.4,
    target: { text: '÷ Hono floor >= 0.35', met: true },
  };

  it('shows the ceiling, what it is judged against with its rate, the ratio and the target', () => {
    const [head, , line] = loadTable([row]).split('\n');
    const cells = (text = '') => text.split(/\s{2,}/);
    expect(cells(head)).toEqual([
      'scenario',
      'conns',
      'rps',
      'p50 ms',
      'p99 ms',
      'ceiling rps',
      '÷ ceiling',
      'against',
      'its rps',
      'ratio',
      'target',
      'met?',
    ]);
    expect(cells(line)).toEqual([
      'POST /v1/shipments',
      '10',
      '3000',
      '2.80',
      '7.10',
      '27000',
      '0.11',
      'Hono floor',
      '7500',
      '0.40',
      '÷ Hono floor >= 0.35',
      'yes',
    ]);
  });
});

describe('the CPU profile summary', () => {
  it('sums self time by file and function, and the time under a named function', () => {
    // main calls work, which calls a package; 1 ms samples.
    const profile = {
      nodes: [
        { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 }, children: [2] },
        {
          id: 2,
          callFrame: { functionName: 'main', url: 'file:///x/dist/main.js', lineNumber: 0 },
          children: [3],
        },
        {
          id: 3,
          callFrame: { functionName: 'work', url: 'file:///x/dist/main.js', lineNumber: 9 },
          children: [4],
        },
        {
          id: 4,
          callFrame: { functionName: 'parse', url: 'file:///x/node_modules/yaml/dist/a.js', lineNumber: 1 },
        },
      ],
      startTime: 0,
      endTime: 4000,
      samples: [2, 3, 4, 4],
      timeDeltas: [1000, 1000, 1000, 1000],
    };
    const summary = summarize(profile, ['work', 'main']);
    expect(summary.totalMs).toBe(4);
    expect(new Map(summary.byPlace)).toEqual(
      new Map([
        ['dist/main.js', 2],
        ['package yaml', 2],
      ]),
    );
    expect(summary.byFunction[0]).toEqual(['parse package yaml:2', 2]);
    expect(summary.under).toEqual([
      ['work', 3],
      ['main', 4],
    ]);
  });
});
