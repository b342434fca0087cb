import { spawn } from 'node:child_process';
import { expect } from 'vitest';

/**
 * What the command-line tests share: the built command (`dist/main.js`, which `npm test` builds
 * first; a control command starts in a tenth of the time `src/main.ts` takes through tsx) run as a
 * child process against a sandbox, and plain calls to that sandbox to set the scene.
 */

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The test runner's environment without the commands' own variables, which each test sets. */
const {
  SHIPPING_SANDBOX_URL: _url,
  SHIPPING_SANDBOX_KEY: _key,
  SANDBOX_ADMIN_TOKEN: _token,
  ...baseEnv
} = process.env;

/** Starts the built command with the sandbox's address in SHIPPING_SANDBOX_URL (a flag wins over it). */
export function spawnCli(origin: string, args: string[], env: Record<string, string> = {}) {
  return spawn(process.execPath, ['dist/main.js', ...args], {
    env: { ...baseEnv, SHIPPING_SANDBOX_URL: origin, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs the built command to its end. */
export function runCli(origin: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const child = spawnCli(origin, args, env);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += String(chunk);
  });
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** One call to the sandbox, with the key (none: `null`) and a JSON body if given. */
export async function callSandbox(
  origin: string,
  method: string,
  path: string,
  key: string | null,
  body?: unknown,
) {
  const response = await fetch(`${origin}${path}`, {
    method,
    headers: {
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

/** A new account's key. */
export async function newAccountAt(origin: string): Promise<string> {
  const { status, body } = await callSandbox(origin, 'POST', '/_sandbox/accounts', null, {});
  expect(status).toBe(201);
  return body.api_key as string;
}
