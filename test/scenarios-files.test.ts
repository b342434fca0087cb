import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BUILTIN_SCENARIOS_DIR,
  loadScenarios,
  parseScenario,
  type Scenario,
  ScenarioFileError,
} from '../src/scenarios/files.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const root = mkdtempSync(path.join(tmpdir(), 'scenarios-test-'));
let dirCount = 0;

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A fresh directory holding the given files. */
function dirWith(files: Record<string, string>): string {
  const dir = path.join(root, `d${dirCount++}`);
  mkdirSync(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

/** The error that loading one file gives, and that file's path. */
function failure(name: string, text: string): { error: ScenarioFileError; file: string } {
  const dir = dirWith({ [name]: text });
  try {
    loadScenarios([dir]);
  } catch (error) {
    expect(error).toBeInstanceOf(ScenarioFileError);
    return { error: error as ScenarioFileError, file: path.join(dir, name) };
  }
  throw new Error(`${name} loaded without an error`);
}

const total = (scenario: Scenario) => scenario.steps.reduce((sum, step) => sum + step.afterMs, 0);
const last = (scenario: Scenario) => scenario.steps.at(-1)!;

describe('built-in scenarios', () => {
  const builtIn = loadScenarios([BUILTIN_SCENARIOS_DIR]);

  it('loads every file of scenarios/', () => {
    expect([...builtIn.keys()].sort()).toEqual([
      'delayed_weather',
      'exception_lost',
      'exception_then_delivered',
      'express',
      'returned_to_sender',
      'standard',
      'stuck_pre_transit',
    ]);
  });

  it('starts every scenario with pre_transit at the label creation', () => {
    for (const scenario of builtIn.values()) {
      expect(scenario.steps[0]).toMatchObject({ status: 'pre_transit', afterMs: 0 });
      expect(scenario.description.length).toBeGreaterThan(10);
    }
  });

  it('gives each scenario the journey its name promises', () => {
    const get = (name: string) => builtIn.get(name)!;
    expect(last(get('standard')).status).toBe('delivered');
    expect(total(get('standard'))).toBeGreaterThan(2.5 * DAY);
    expect(total(get('standard'))).toBeLessThan(3.5 * DAY);

    expect(last(get('express')).status).toBe('delivered');
    expect(total(get('express'))).toBeLessThanOrEqual(30 * HOUR);

    const retry = get('exception_then_delivered').steps.map((step) => step.status);
    expect(retry.indexOf('exception')).toBeGreaterThan(0);
    expect(retry.at(-1)).toBe('delivered');

    expect(last(get('exception_lost'))).toMatchObject({ status: 'exception', description: /lost/i });

    const returned = get('returned_to_sender').steps.map((step) => step.status);
    expect(returned.lastIndexOf('exception')).toBeLessThan(returned.indexOf('returned'));
    expect(returned.at(-1)).toBe('returned');

    const weather = get('delayed_weather').steps;
    expect(weather.find((step) => step.status === 'exception')?.description).toMatch(/weather/i);
    expect(weather.at(-1)?.status).toBe('delivered');

    expect(get('stuck_pre_transit').steps.every((step) => step.status === 'pre_transit')).toBe(true);
  });
});

describe('scenario file syntax', () => {
  it('reads durations as ms strings, or as seconds when bare', () => {
    const scenario = parseScenario(
      [
        'name: timing',
        'description: Durations in every accepted spelling.',
        'steps:',
        '  - { after: 0, status: pre_transit }',
        '  - { after: 90, status: accepted }',
        '  - { after: "90", status: in_transit }',
        '  - { after: 1.5h, status: in_transit, at: transit_hub }',
        '  - after: 2 days',
        '    status: delivered',
        '    description: Left at the door in {city}',
      ].join('\n'),
      '/somewhere/timing.yaml',
    );
    expect(scenario.steps.map((step) => step.afterMs)).toEqual([0, 90_000, 90_000, 1.5 * HOUR, 2 * DAY]);
    expect(scenario.steps[3]).toEqual({ afterMs: 1.5 * HOUR, status: 'in_transit', at: 'transit_hub' });
    expect(scenario.steps[4]?.description).toBe('Left at the door in {city}');
  });

  it('reads JSON files, and names the line of a bad field in them', () => {
    const steps = [{ after: '0s', status: 'pre_transit' }];
    const dir = dirWith({
      'json_one.json': JSON.stringify(
        { name: 'json_one', description: 'A JSON scenario.', steps },
        null,
        '\t',
      ),
    });
    expect(loadScenarios([dir]).get('json_one')?.steps).toEqual([{ afterMs: 0, status: 'pre_transit' }]);

    const bad = {
      name: 'json_bad',
      description: 'A JSON scenario.',
      steps: [{ ...steps[0], status: 'lost' }],
    };
    const { error, file } = failure('json_bad.json', JSON.stringify(bad, null, 2));
    expect(error.message).toMatch(
      new RegExp(`^${escapeRegExp(file)}:7: steps\\[0\\]\\.status: must be one of`),
    );
  });

  it('ignores files that are not scenarios', () => {
    const dir = dirWith({ 'README.md': '# notes', '.hidden.yaml': 'not: [valid' });
    expect(loadScenarios([dir]).size).toBe(0);
  });
});

describe('invalid scenario files', () => {
  const head = (name: string) => [`name: ${name}`, 'description: A test scenario.', 'steps:'];
  const start = ['  - after: 0s', '    status: pre_transit'];

  it('names an unknown key of a step, with its line', () => {
    const { error, file } = failure(
      'extra.yaml',
      [...head('extra'), ...start, '  - after: 2h', '    status: accepted', '    colour: red'].join('\n'),
    );
    expect(error.message).toContain(`${file}:8: steps[1].colour: is not a field of a step`);
    expect(error.file).toBe(file);
  });

  it('names an unknown top-level key', () => {
    const { error, file } = failure('top.yaml', [...head('top'), ...start, 'author: me'].join('\n'));
    expect(error.message).toContain(`${file}:6: author: is not a field of a scenario`);
  });

  it('names a bad status and lists the good ones', () => {
    const { error, file } = failure(
      'bad_status.yaml',
      [...head('bad_status'), ...start, '  - after: 2h', '    status: shipped'].join('\n'),
    );
    expect(error.message).toBe(
      `${file}:7: steps[1].status: must be one of pre_transit, accepted, in_transit, out_for_delivery, ` +
        'delivered, exception, returned, not "shipped"',
    );
  });

  it('names a bad duration', () => {
    const { error, file } = failure(
      'bad_after.yaml',
      [...head('bad_after'), ...start, '  - after: soon', '    status: accepted'].join('\n'),
    );
    expect(error.message).toContain(
      `${file}:6: steps[1].after: must be a duration such as 90s, 5m, 2h or 3d`,
    );
  });

  it('refuses a negative duration', () => {
    const { error } = failure(
      'negative.yaml',
      [...head('negative'), ...start, '  - after: -5m', '    status: accepted'].join('\n'),
    );
    expect(error.message).toMatch(/steps\[1\]\.after: must not be negative/);
  });

  it('names a missing field', () => {
    const { error } = failure('missing.yaml', [...head('missing'), ...start, '  - after: 5m'].join('\n'));
    expect(error.message).toMatch(/missing\.yaml:6: steps\[1\]\.status: is required/);
  });

  it('requires the first step to be pre_transit at 0s', () => {
    const first = failure(
      'first.yaml',
      [...head('first'), '  - after: 0s', '    status: accepted'].join('\n'),
    );
    expect(first.error.message).toContain(
      `${first.file}:5: steps[0].status: must be pre_transit, not accepted`,
    );

    const late = failure(
      'late.yaml',
      [...head('late'), '  - after: 1h', '    status: pre_transit'].join('\n'),
    );
    expect(late.error.message).toContain(`${late.file}:4: steps[0].after: must be 0s`);
  });

  it('requires the name to be the file name', () => {
    const { error, file } = failure('right_name.yaml', [...head('wrong_name'), ...start].join('\n'));
    expect(error.message).toBe(
      `${file}:1: name: must be "right_name", the file's name without its extension, not "wrong_name"`,
    );
  });

  it('requires a slug for a name', () => {
    const { error } = failure('Bad-Name.yaml', [...head('Bad-Name'), ...start].join('\n'));
    expect(error.message).toMatch(
      /Bad-Name\.yaml:1: name: must be lower-case letters, digits and underscores/,
    );
  });

  it('reports YAML syntax errors with the line', () => {
    const { error, file } = failure(
      'broken.yaml',
      ['name: broken', 'description: [unclosed', 'steps:', '  - after: 0s'].join('\n'),
    );
    expect(error.message).toMatch(new RegExp(`^${escapeRegExp(file)}:\\d+: invalid YAML: \\S`));
    expect(error.issues[0]?.line).toBeGreaterThanOrEqual(2);
  });

  it('reports JSON syntax errors with the line', () => {
    const { error, file } = failure('broken_json.json', '{\n  "name": "broken_json",\n  "steps": [,]\n}');
    expect(error.message).toMatch(new RegExp(`^${escapeRegExp(file)}:3: invalid JSON: \\S`));
    expect(error.message).not.toMatch(/is not valid JSON|\n/);
  });

  it('refuses empty steps and empty files', () => {
    const empty = failure('empty.yaml', [...head('empty').slice(0, 2), 'steps: []'].join('\n'));
    expect(empty.error.message).toContain(`${empty.file}:3: steps: must have at least one step`);

    const blank = failure('blank.yaml', '');
    expect(blank.error.message).toBe(
      `${blank.file}: the file is empty; a scenario has name, description, steps`,
    );
  });

  it('lists every problem of a file, one a line', () => {
    const { error } = failure(
      'many.yaml',
      ['name: many', 'steps:', '  - after: 0s', '    status: pre_transit', '    at: moon'].join('\n'),
    );
    expect(error.issues.map((issue) => issue.path).sort()).toEqual(['description', 'steps[0].at']);
    expect(error.message.split('\n')).toHaveLength(2);
  });

  it('refuses two files of one name in one directory', () => {
    const text = [...head('twice'), ...start].join('\n');
    const dir = dirWith({ 'twice.yaml': text, 'twice.yml': text });
    expect(() => loadScenarios([dir])).toThrow(/twice\.yml: name: twice is also defined by .*twice\.yaml/);
  });

  it('names a scenarios directory that does not exist', () => {
    const missing = path.join(root, 'no-such-dir');
    expect(() => loadScenarios([missing])).toThrow(
      `${missing}: cannot read the scenarios directory: no such directory`,
    );
  });
});

describe('user scenario directories', () => {
  it('replace built-in scenarios by name and add their own', () => {
    const user = dirWith({
      'standard.yaml': [
        'name: standard',
        'description: My own standard.',
        'steps:',
        '  - { after: 0s, status: pre_transit }',
        '  - { after: 1d, status: delivered }',
      ].join('\n'),
      'my_flow.yml': [
        'name: my_flow',
        'description: Something only I need.',
        'steps:',
        '  - { after: 0s, status: pre_transit }',
      ].join('\n'),
    });
    const builtIn = loadScenarios([BUILTIN_SCENARIOS_DIR]);
    const merged = loadScenarios([BUILTIN_SCENARIOS_DIR, user]);

    expect(merged.get('standard')?.description).toBe('My own standard.');
    expect(merged.get('standard')?.steps).toHaveLength(2);
    expect(merged.get('my_flow')?.steps).toEqual([{ afterMs: 0, status: 'pre_transit' }]);
    expect(merged.get('express')).toEqual(builtIn.get('express'));
    expect(merged.size).toBe(builtIn.size + 1);
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
