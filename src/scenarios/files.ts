import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ms from 'ms';
import { isNode, LineCounter, parseDocument } from 'yaml';
import { PROJECT_ROOT } from '../core/fixtures.js';
import { z } from '../core/zod.js';
import { PLACES, type Place, TRACKING_STATUSES, type TrackingStatus } from './vocabulary.js';

/**
 * Scenario files: named tracking timelines, one a file, in YAML or JSON. A bad file stops start-up with
 * a message naming the file, the line where it can tell, the field and the reason, because a typo in a
 * scenario would otherwise surface much later as a wrong tracking answer.
 */

export interface ScenarioStep {
  /** Delay since the previous step (the label's creation for the first). */
  afterMs: number;
  status: TrackingStatus;
  /** The file's own wording; without it the carrier's usual wording of the status is used. */
  description?: string;
  /** Where the step happens; without it the status's natural place along the route. */
  at?: Place;
}

export interface Scenario {
  name: string;
  description: string;
  steps: ScenarioStep[];
}

export interface ScenarioIssue {
  /** `steps[2].status`; empty for the file as a whole. */
  path: string;
  message: string;
  line?: number;
}

export class ScenarioFileError extends Error {
  override name = 'ScenarioFileError';

  constructor(
    readonly file: string,
    readonly issues: readonly ScenarioIssue[],
  ) {
    super(issues.map((issue) => formatIssue(file, issue)).join('\n'));
  }
}

/** `scenarios/` at the package root; the same relative path from `src/scenarios` and `dist/scenarios`. */
export const BUILTIN_SCENARIOS_DIR = path.join(PROJECT_ROOT, 'scenarios');

/** The built-in scenarios, then the user's directory, whose files replace built-in ones of the same name. */
export function scenarioDirectories(userDirectory: string | undefined): string[] {
  return userDirectory ? [BUILTIN_SCENARIOS_DIR, userDirectory] : [BUILTIN_SCENARIOS_DIR];
}

export const SCENARIO_EXTENSIONS = ['.yaml', '.yml', '.json'] as const;

const MAX_DELAY_MS = 365 * 24 * 60 * 60 * 1000;
const DURATION_HINT = 'must be a duration such as 90s, 5m, 2h or 3d, or a number of seconds';
const STEP_FIELDS = 'after, status, description, at';
const FILE_FIELDS = 'name, description, steps';

/** The message for a value of the wrong kind, or `is required` when the field is missing. */
const expected = (what: string) => (issue: { input?: unknown }) =>
  issue.input === undefined ? 'is required' : what;

const oneOf = (values: readonly string[]) => (issue: { input?: unknown }) =>
  issue.input === undefined
    ? 'is required'
    : `must be one of ${values.join(', ')}, not ${JSON.stringify(issue.input)}`;

const DurationSchema = z
  .union([z.number(), z.string()], { error: expected(DURATION_HINT) })
  .transform((value, ctx) => {
    const millis = durationMs(value);
    if (millis === undefined)
      ctx.addIssue({ code: 'custom', message: `${DURATION_HINT}, not ${JSON.stringify(value)}` });
    else if (millis < 0) ctx.addIssue({ code: 'custom', message: 'must not be negative' });
    else if (millis > MAX_DELAY_MS) ctx.addIssue({ code: 'custom', message: 'must be at most 365d' });
    else return millis;
    return z.NEVER;
  });

/** Milliseconds; a bare number, or a string of digits, counts seconds (`ms` would read it as milliseconds). */
function durationMs(value: number | string): number | undefined {
  if (typeof value === 'number') return Math.round(value * 1000);
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  if (!/^-?\d/.test(text)) return undefined;
  const millis: number | undefined = ms(text as ms.StringValue);
  return millis === undefined || !Number.isFinite(millis) ? undefined : Math.round(millis);
}

const text = (max: number) =>
  z
    .string({ error: expected('must be text') })
    .trim()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`);

const StepSchema = z.strictObject(
  {
    after: DurationSchema,
    status: z.enum(TRACKING_STATUSES, { error: oneOf(TRACKING_STATUSES) }),
    description: text(200).optional(),
    at: z.enum(PLACES, { error: oneOf(PLACES) }).optional(),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `is not a field of a step (a step has ${STEP_FIELDS})`
        : expected(`must be a mapping with ${STEP_FIELDS}`)(issue),
  },
);

const FileSchema = z.strictObject(
  {
    name: z
      .string({ error: expected('must be text') })
      .regex(/^[a-z0-9_]+$/, 'must be lower-case letters, digits and underscores, like the file name'),
    description: text(500),
    steps: z
      .array(StepSchema, { error: expected('must be a list of steps') })
      .min(1, 'must have at least one step')
      .max(100, 'must have at most 100 steps')
      .superRefine((steps, ctx) => {
        const first = steps[0];
        if (first && first.status !== 'pre_transit') {
          ctx.addIssue({
            code: 'custom',
            path: [0, 'status'],
            message: `must be pre_transit, not ${first.status}: the first step is the label's creation`,
          });
        }
        if (first && first.after !== 0) {
          ctx.addIssue({
            code: 'custom',
            path: [0, 'after'],
            message: "must be 0s: the first step is the label's creation",
          });
        }
      }),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `is not a field of a scenario (a scenario has ${FILE_FIELDS})`
        : issue.input === undefined || issue.input === null
          ? `the file is empty; a scenario has ${FILE_FIELDS}`
          : `must be a mapping with ${FILE_FIELDS}`,
  },
);

/**
 * Every scenario file of the directories, in order. A later directory replaces a scenario of the same
 * name from an earlier one: the built-in directory comes first, so a user's own `standard.yaml` in
 * `--scenarios-dir` takes the place of the built-in `standard`.
 */
export function loadScenarios(dirs: readonly string[]): Map<string, Scenario> {
  const scenarios = new Map<string, Scenario>();
  for (const dir of dirs) {
    const fromThisDir = new Map<string, string>();
    for (const [file, read] of scenarioSources(dir)) {
      const scenario = read();
      const twin = fromThisDir.get(scenario.name);
      if (twin) {
        throw new ScenarioFileError(file, [
          { path: 'name', message: `${scenario.name} is also defined by ${displayPath(twin)}` },
        ]);
      }
      fromThisDir.set(scenario.name, file);
      scenarios.set(scenario.name, scenario);
    }
  }
  return scenarios;
}

/**
 * The built-in scenario files as the build read them (scripts/build.mjs), by file name: a bundle's
 * start validates them but parses no YAML (about 15 ms of a start). From the sources they are read
 * from `scenarios/` like any directory.
 */
declare const BUILT_SCENARIOS: string | undefined;

/** Each scenario file of the directory, with how to read it. */
function scenarioSources(dir: string): [file: string, read: () => Scenario][] {
  if (dir === BUILTIN_SCENARIOS_DIR && typeof BUILT_SCENARIOS === 'string') {
    return Object.entries(JSON.parse(BUILT_SCENARIOS) as Record<string, unknown>).map(([name, data]) => {
      const file = path.join(dir, name);
      return [file, () => scenarioOf({ data, lineOf: () => undefined }, file)];
    });
  }
  return scenarioFiles(dir).map((file) => [file, () => loadScenarioFile(file)]);
}

/** The scenario files of one directory, sorted; other files (a README, dotfiles) are left alone. */
function scenarioFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT'
        ? 'no such directory'
        : code === 'ENOTDIR'
          ? 'is not a directory'
          : (error as Error).message;
    throw new ScenarioFileError(dir, [
      { path: '', message: `cannot read the scenarios directory: ${reason}` },
    ]);
  }
  return names
    .filter((name) => !name.startsWith('.') && SCENARIO_EXTENSIONS.some((ext) => name.endsWith(ext)))
    .sort()
    .map((name) => path.join(dir, name))
    .filter((file) => statSync(file).isFile());
}

export function loadScenarioFile(file: string): Scenario {
  let source: string;
  try {
    source = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ScenarioFileError(file, [
      { path: '', message: `cannot read the file: ${(error as Error).message}` },
    ]);
  }
  return parseScenario(source, file);
}

/** Parses one file's text; `file` decides the syntax (by extension) and the name the scenario must have. */
export function parseScenario(source: string, file: string): Scenario {
  return scenarioOf(file.endsWith('.json') ? parseJson(source, file) : parseYaml(source, file), file);
}

/** A file's parsed data checked as a scenario of the file's name. */
function scenarioOf(parsed: Parsed, file: string): Scenario {
  const result = FileSchema.safeParse(parsed.data);
  if (!result.success) {
    throw new ScenarioFileError(
      file,
      result.error.issues.flatMap((issue) => {
        const keys = issue.code === 'unrecognized_keys' ? issue.keys : [undefined];
        return keys.map((key) => {
          const at = key === undefined ? issue.path : [...issue.path, key];
          return { path: formatPath(at), message: issue.message, line: parsed.lineOf(at) };
        });
      }),
    );
  }
  const expectedName = path.basename(file).replace(/\.(ya?ml|json)$/, '');
  if (result.data.name !== expectedName) {
    throw new ScenarioFileError(file, [
      {
        path: 'name',
        message: `must be ${JSON.stringify(expectedName)}, the file's name without its extension, not ${JSON.stringify(result.data.name)}`,
        line: parsed.lineOf(['name']),
      },
    ]);
  }
  return {
    name: result.data.name,
    description: result.data.description,
    steps: result.data.steps.map(({ after, ...step }) => ({ afterMs: after, ...step })),
  };
}

interface Parsed {
  data: unknown;
  lineOf(path: readonly PropertyKey[]): number | undefined;
}

function parseYaml(source: string, file: string): Parsed {
  const { doc, lineOf, error } = readYaml(source);
  if (error)
    throw new ScenarioFileError(file, [
      { path: '', message: `invalid YAML: ${error.reason}`, line: error.line },
    ]);
  return { data: doc.toJS(), lineOf };
}

/**
 * JSON.parse decides what is valid JSON; the YAML reader (JSON is a subset of YAML) only finds lines, since
 * some of Node's JSON messages give no position.
 */
function parseJson(source: string, file: string): Parsed {
  const yaml = readYaml(source);
  try {
    return { data: JSON.parse(source), lineOf: yaml.error ? () => undefined : yaml.lineOf };
  } catch (error) {
    const message = (error as Error).message;
    const position = /at position (\d+)/.exec(message)?.[1];
    const line =
      position === undefined ? yaml.error?.line : source.slice(0, Number(position)).split('\n').length;
    // Node quotes the whole source in some messages: "Unexpected token ',', "{ ... }" is not valid JSON".
    const reason = message
      .replace(/ in JSON at position \d+.*$/s, '')
      .replace(/, (\.\.\.)?".*" is not valid JSON$/s, '');
    throw new ScenarioFileError(file, [{ path: '', message: `invalid JSON: ${reason}`, line }]);
  }
}

function readYaml(source: string) {
  const lineCounter = new LineCounter();
  const doc = parseDocument(source, { lineCounter, prettyErrors: true });
  const first = doc.errors[0];
  const error = first && {
    reason: first.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '') ?? first.code,
    line: first.linePos?.[0].line,
  };
  // The nearest node that exists: a missing field is reported on the line of the mapping that lacks it.
  const lineOf = (at: readonly PropertyKey[]): number | undefined => {
    for (let keys = [...at]; ; keys = keys.slice(0, -1)) {
      const node = keys.length === 0 ? doc.contents : doc.getIn(keys, true);
      if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
      if (keys.length === 0) return undefined;
    }
  };
  return { doc, lineOf, error };
}

/** `steps[2].status`, the way the file's author would point at the field. */
function formatPath(at: readonly PropertyKey[]): string {
  return at
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`))
    .join('');
}

function formatIssue(file: string, issue: ScenarioIssue): string {
  const where = issue.line === undefined ? displayPath(file) : `${displayPath(file)}:${issue.line}`;
  return issue.path ? `${where}: ${issue.path}: ${issue.message}` : `${where}: ${issue.message}`;
}

/** Relative to the working directory when the file is under it, which is how a user typed it. */
function displayPath(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : file;
}
