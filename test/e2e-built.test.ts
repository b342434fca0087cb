import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFDocument } from 'pdf-lib';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_KEY, shipmentRequest } from './helpers.js';

/**
 * The built command (`dist/main.js`, the launcher, and the bundle it loads through V8's code cache),
 * as `npm start` runs it: the rest of the suite runs `src/`, so this is where the bundle is proven.
 * `npm test` builds before it runs the tests.
 */
const scratch = mkdtempSync(join(tmpdir(), 'sandbox-built-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function start(
  dataDir: string,
): Promise<{ child: ChildProcessWithoutNullStreams; origin: string; stderr: () => string }> {
  // Its own TMPDIR: the first start compiles and writes the code cache, the second reads it.
  const child = spawn(
    'node',
    ['dist/main.js', '--data-dir', dataDir, '--port', '0', '--https-port', '0', '--log-level', 'warn'],
    {
      env: { ...process.env, TMPDIR: scratch },
      stdio: 'pipe',
    },
  );
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const origin = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      stdout += String(chunk);
      const match = /API\s+(http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(stdout);
      if (match && stdout.includes('Test key')) resolve(match[1] as string);
    });
    child.once('exit', () => reject(new Error(`exited early: ${stderr}`)));
  });
  return { child, origin, stderr: () => stderr };
}

async function stop(child: ChildProcessWithoutNullStreams) {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

describe('the built command', () => {
  it.each(['first start (compiles)', 'second start (from the code cache)'])(
    'creates a label and renders its PDF: %s',
    async (round) => {
      expect(existsSync('dist/main.js'), 'npm test builds dist/ first').toBe(true);
      const { child, origin, stderr } = await start(join(scratch, `data-${round.length}`));
      try {
        const headers = { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' };
        const shipment = (await (
          await fetch(`${origin}/v1/shipments`, {
            method: 'POST',
            headers,
            body: JSON.stringify(shipmentRequest({ carrier: 'ups' })),
          })
        ).json()) as { id: string };
        const label = (await (
          await fetch(`${origin}/v1/labels`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ shipment_id: shipment.id }),
          })
        ).json()) as { id: string };
        const file = await fetch(`${origin}/v1/labels/${label.id}/download`, { headers });
        expect(file.status).toBe(200);
        const pdf = await PDFDocument.load(new Uint8Array(await file.arrayBuffer()));
        expect(pdf.getPage(0).getSize()).toEqual({ width: 288, height: 432 });
        expect(stderr()).toBe('');
      } finally {
        await stop(child);
      }
    },
  );
});
