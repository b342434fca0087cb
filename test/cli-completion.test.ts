import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { candidatesFor } from '../src/cli/completion.js';
import { createProgram } from '../src/cli/program.js';
import { SETTINGS } from '../src/config/index.js';
import { runCli } from './cli-harness.js';

/**
 * `completion bash|zsh|fish`: bash really completes (the script sourced into a real bash, its
 * function called as bash calls it on TAB, over the built command on PATH), and the candidates come
 * from the command tree that parses the words.
 */

const SPAWNS = 60_000;
const run = promisify(execFile);

/** A folder on PATH whose `shipping-sandbox` is the built command, as an installed package gives it. */
const bin = mkdtempSync(join(tmpdir(), 'sandbox-completion-'));
writeFileSync(
  join(bin, 'shipping-sandbox'),
  `#!/bin/sh\nexec "${process.execPath}" "${resolve('dist/main.js')}" "$@"\n`,
);
chmodSync(join(bin, 'shipping-sandbox'), 0o755);
afterAll(() => rmSync(bin, { recursive: true, force: true }));

/** What bash offers on TAB after `line` (the cursor at its end), through the sourced script. */
async function bashCompletes(line: string): Promise<string[]> {
  const words = line.split(' ');
  const script = [
    'source <(shipping-sandbox completion bash)',
    `COMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')})`,
    `COMP_CWORD=${words.length - 1}`,
    `COMP_LINE='${line}'`,
    `COMP_POINT=${line.length}`,
    '_shipping_sandbox',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: bash expands it, not JavaScript
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join('\n');
  const { stdout } = await run('bash', ['--norc', '--noprofile', '-c', script], {
    env: { PATH: `${bin}:${process.env.PATH}`, HOME: bin },
  });
  return stdout.split('\n').filter(Boolean);
}

describe.concurrent('bash completion', () => {
  it.each([
    ['shipping-sandbox cl', ['clock']],
    ['shipping-sandbox clock adv', ['advance']],
    ['shipping-sandbox clock advance --t', ['--to']],
    ['shipping-sandbox trigger tracking.d', ['tracking.delivered']],
    ['shipping-sandbox --po', ['--port', '--port-file']],
    ['shipping-sandbox serve --log-l', ['--log-level']],
    ['shipping-sandbox logs ', ['tail']],
    ['shipping-sandbox webhooks create https://x.test --ev', ['--events']],
    ['shipping-sandbox faults create /v1/rates --method P', ['POST', 'PATCH', 'PUT']],
    [
      'shipping-sandbox shipments advance shp_1 ',
      ['pre_transit', 'accepted', 'in_transit', 'out_for_delivery', 'delivered', 'exception', 'returned'],
    ],
    ['shipping-sandbox completion ', ['bash', 'zsh', 'fish']],
    // Nothing to offer: bash completes file names itself (`complete -o default`).
    ['shipping-sandbox report --junit ', []],
  ])('%s', async (line, expected) => expect(await bashCompletes(line)).toEqual(expected), SPAWNS);

  it(
    'completes every command at the start, the hidden one aside',
    async () => {
      const offered = await bashCompletes('shipping-sandbox ');
      for (const command of ['serve', 'clock', 'webhooks', 'faults', 'keys', 'reset', 'logs', 'completion'])
        expect(offered).toContain(command);
      expect(offered).not.toContain('__complete');
      expect(offered).not.toContain('help');
    },
    SPAWNS,
  );
});

describe('the completion scripts', () => {
  it(
    'print for bash, zsh and fish, each handing the words to the command',
    async () => {
      const [bash, zsh, fish] = await Promise.all(
        ['bash', 'zsh', 'fish'].map((shell) => runCli('http://127.0.0.1:1', ['completion', shell])),
      );
      expect(bash?.stdout).toContain('complete -o default -F _shipping_sandbox shipping-sandbox\n');
      expect(zsh?.stdout).toMatch(/^#compdef shipping-sandbox\n/);
      expect(zsh?.stdout).toContain('compdef _shipping_sandbox shipping-sandbox\n');
      expect(fish?.stdout).toContain("complete -c shipping-sandbox -f -a '(___shipping_sandbox_complete)'\n");
      for (const script of [bash, zsh, fish]) {
        expect(script?.code).toBe(0);
        expect(script?.stdout).toContain('shipping-sandbox __complete -- ');
      }
    },
    SPAWNS,
  );
});

describe('the candidates', () => {
  const program = createProgram({
    version: '0.0.0',
    servingFlags: Object.values(SETTINGS),
    serve: async () => {},
    conformance: () => Promise.reject(new Error('completion never runs it')),
  });
  const values = (...words: string[]) => candidatesFor(program, words).map((c) => c.value);

  it("follow the tree past options and their values to the next argument's choices", () => {
    expect(values('shipments', '--url', 'http://x', 'advance', 'shp_1', 'deli')).toEqual(['delivered']);
    expect(values('trigger', '--key', 'svc_test_x', '')).toContain('label.voided');
    expect(values('events', '--event', 'shipment.c')).toEqual(['shipment.created', 'shipment.cancelled']);
    expect(values('accounts', 'create', '--plan', '')).toEqual(['starter', 'growth', 'enterprise']);
    expect(values('--log-level', 'de')).toEqual(['debug']);
    expect(values('serve', '--log-format', '')).toEqual(['pretty', 'json']);
    expect(values('--memory', '--webhook-targets', '')).toEqual(['local', 'public']);
  });

  it("offer a group's default subcommand's options, and no subcommand after an argument", () => {
    expect(values('clock', '--j')).toEqual(['--json']);
    expect(values('faults', '--li')).toEqual(['--limit']);
    expect(values('deliveries', 'wh_1', '')).toEqual([]);
  });

  it('describe each candidate on one short line', () => {
    const [clock] = candidatesFor(program, ['cloc']);
    expect(clock?.description).toMatch(/^the account's clock/);
    for (const candidate of candidatesFor(program, ['']))
      expect(candidate.description).toMatch(/^[^\n\t]{0,70}$/);
  });
});
