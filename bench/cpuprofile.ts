/**
 * Sums a V8 `.cpuprofile` (from `--sandbox-node-arg=--cpu-prof`, or `node --cpu-prof dist/main.js`) by
 * where the time went: self time by file (node_modules packages as one line each) and by function,
 * and the total under each of the start-up's phases when asked. Usage:
 *
 *   npx tsx bench/cpuprofile.ts <file.cpuprofile> [--top 25] [--under <function name>]...
 *
 * `--under startServer` adds the time spent in `startServer` and everything it called (once per
 * stack, so recursion is not counted twice).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A file as a person would name it: a package by its name, the sandbox's chunks by their file. */
export function placeOf(url: string): string {
  if (url === '') return '(native, GC, idle)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return `package ${pkg[1]}`;
  if (url.startsWith('node:')) return url;
  return url.replace(/^file:\/\//, '').replace(/^.*\/(dist|src|bench)\//, '$1/');
}

export interface Summary {
  totalMs: number;
  byPlace: [string, number][];
  byFunction: [string, number][];
  under: [string, number][];
}

export function summarize(profile: Profile, underNames: string[] = []): Summary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const selfMs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  const byPlace = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const under = new Map<string, number>(underNames.map((name) => [name, 0]));
  for (const [id, ms] of selfMs) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const place = placeOf(url);
    byPlace.set(place, (byPlace.get(place) ?? 0) + ms);
    const name = `${functionName || '(anonymous)'} ${place}:${lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const fn = byId.get(at)?.callFrame.functionName ?? '';
      if (under.has(fn) && !seen.has(fn)) {
        seen.add(fn);
        under.set(fn, (under.get(fn) ?? 0) + ms);
      }
    }
  }
  const sorted = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]);
  return {
    totalMs: (profile.endTime - profile.startTime) / 1000,
    byPlace: sorted(byPlace),
    byFunction: sorted(byFunction),
    under: [...under],
  };
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string' }, under: { type: 'string', multiple: true } },
  });
  const file = positionals[0];
  if (!file) {
    process.stderr.write('usage: npx tsx bench/cpuprofile.ts <file.cpuprofile> [--top n] [--under fn]...\n');
    process.exitCode = 2;
    return;
  }
  const top = Number(values.top ?? 25);
  const summary = summarize(JSON.parse(readFileSync(file, 'utf8')) as Profile, values.under ?? []);
  const line = ([name, ms]: [string, number]) =>
    `${ms.toFixed(1).padStart(9)} ms ${((ms / summary.totalMs) * 100).toFixed(1).padStart(5)} %  ${name}`;
  const out = [`${file}: ${summary.totalMs.toFixed(1)} ms profiled`, '', 'self time by file:'];
  out.push(...summary.byPlace.slice(0, top).map(line), '', 'self time by function:');
  out.push(...summary.byFunction.slice(0, top).map(line));
  if (summary.under.length) out.push('', 'total time under:', ...summary.under.map(line));
  process.stdout.write(`${out.join('\n')}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
