import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SETTINGS } from '../src/config/index.js';

/**
 * What the tests of the container files share (containers.test.ts, replicas-examples.test.ts): the
 * repository's paths, the sandbox's flags and variables, a Dockerfile read as far as they need, and
 * running a health check command as Docker or Kubernetes would.
 */

export const ROOT = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
export const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
export const NODE_MAJOR = process.versions.node.split('.')[0];
/** What `docker build -t shipping-sandbox .` tags, and what every example runs. */
export const IMAGE_NAME = 'shipping-sandbox';

const SETTING_LIST = Object.values(SETTINGS);
export const FLAGS = new Set(SETTING_LIST.map((setting) => `--${setting.flag}`));
export const VARIABLES = new Set(SETTING_LIST.map((setting) => setting.env));

// ---------------------------------------------------------------------------------------------
// A Dockerfile, as far as these checks need: instructions with their continuations joined.

export interface Instruction {
  keyword: string;
  args: string;
}

export function parseDockerfile(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    // Comment lines are dropped, inside a continuation too, as Docker does.
    if (line.startsWith('#') || (pending === '' && line === '')) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/s.exec(`${pending}${line}`.trim()) ?? [];
    instructions.push({ keyword: keyword.toUpperCase(), args: args.trim() });
    pending = '';
  }
  if (pending.trim() !== '') throw new Error('the Dockerfile ends inside a continuation');
  return instructions;
}

/** The stages, each the instructions from its FROM on. */
export function stagesOf(instructions: Instruction[]): Instruction[][] {
  const stages: Instruction[][] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') stages.push([]);
    stages.at(-1)?.push(instruction);
  }
  return stages;
}

/** `ENV A=1 B=2` (the only form the Dockerfile uses). */
export function envOf(stage: Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of stage.filter((i) => i.keyword === 'ENV')) {
    for (const pair of args.split(/\s+/)) {
      const [name, ...value] = pair.split('=');
      if (!name || value.length === 0) throw new Error(`ENV ${args}: not NAME=value`);
      env[name] = value.join('=');
    }
  }
  return env;
}

export const args = (stage: Instruction[], keyword: string) =>
  stage.filter((i) => i.keyword === keyword).map((i) => i.args);

// ---------------------------------------------------------------------------------------------
// Running a health check command against a real sandbox

/** Runs a command as Docker runs a health check; resolves to its exit status. */
export function runCheck(command: string[], env: Record<string, string> = {}): Promise<number | null> {
  const [file = '', ...rest] = command;
  return new Promise((done, fail) => {
    const child = spawn(file === 'node' ? process.execPath : file, rest, {
      env: { ...process.env, ...env },
      stdio: 'ignore',
    });
    child.on('error', fail);
    child.on('exit', (code) => done(code));
  });
}

/** A loopback port with nothing listening on it (just freed). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const address = server.address();
  await new Promise((closed) => server.close(closed));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** The same check aimed at another port: the examples name 4010, the test sandbox has its own. */
export const onPort = (text: string, from: number, to: number) =>
  text.replaceAll(`127.0.0.1:${from}/`, `127.0.0.1:${to}/`);

/** A Compose service, as far as the checks read one. */
export type Service = {
  build?: { context: string };
  image?: string;
  command?: string[];
  ports?: string[];
  volumes?: string[];
  environment?: Record<string, string>;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
};

// ---------------------------------------------------------------------------------------------
// The image: what every container example runs

const runStage = stagesOf(parseDockerfile(read('Dockerfile'))).at(-1) ?? [];
/** The variables the image's run stage sets (HOST, PORT, SANDBOX_DATA_DIR, …). */
export const IMAGE_ENV = envOf(runStage);
