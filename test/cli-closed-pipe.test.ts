import { execFile, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { endQuietlyWhenOutputCloses } from '../src/cli/closed-pipe.js';

/**
 * Output cut short by a closed pipe ends the command quietly with status 0, never a stack trace:
 * the built command (`dist/main.js`, which `npm test` builds first) writing into real pipes.
 */

const run = promisify(execFile);

/** Runs the built command with its stdout a pipe whose reader has gone before it writes a byte. */
function runIntoClosedPipe(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['dist/main.js', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  // This end of the pipe closes now; the command is still starting, so its first write meets EPIPE.
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

describe('a closed pipe', () => {
  it.each(['serve --help', '--help', '--version', 'clock --help'])(
    'ends `shipping-sandbox %s` quietly with status 0',
    async (args) => {
      expect(await runIntoClosedPipe(args.split(' '))).toEqual({ code: 0, stderr: '' });
    },
  );

  it('ends it quietly in a shell pipeline, as `serve --help | head -1` and `| true` run it', async () => {
    const shell = (pipeline: string) =>
      run('bash', ['-c', `set -o pipefail; ${pipeline}`], { encoding: 'utf8' });
    const command = `"${process.execPath}" dist/main.js serve --help`;
    const head = await shell(`${command} | head -1`);
    expect(head).toEqual({ stdout: 'Usage: shipping-sandbox serve [flags]\n', stderr: '' });
    // `true` has exited before the command writes: its writes all meet a closed pipe.
    expect(await shell(`${command} | true`)).toEqual({ stdout: '', stderr: '' });
    expect(await shell(`${command} 2>&1 | true`)).toEqual({ stdout: '', stderr: '' });
  });

  it('is the only stream error ended quietly: any other is thrown', () => {
    const stream = new EventEmitter() as NodeJS.WriteStream;
    const exits: number[] = [];
    endQuietlyWhenOutputCloses([stream], (status) => exits.push(status));
    stream.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    expect(exits).toEqual([0]);
    expect(() => stream.emit('error', Object.assign(new Error('write EIO'), { code: 'EIO' }))).toThrow(
      'write EIO',
    );
    expect(exits).toEqual([0]);
  });
});
