import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testConfig } from '../src/config.js';
import { type RunningSandbox, startSandbox } from '../src/server.js';
import { capturingLogger, DEFAULT_KEY } from './helpers.js';

/** Loopback only: the sandboxes below listen on 127.0.0.1. */
function open(origin: string, ca?: Buffer): Socket {
  const { hostname, port } = new URL(origin);
  return ca
    ? connectTls({ host: hostname, port: Number(port), ca, servername: 'localhost' })
    : connectTcp(Number(port), hostname);
}

const problems = (lines: Record<string, unknown>[]) => lines.filter((line) => (line.level as number) >= 40);

describe('clients that go away mid-request', () => {
  const { logger, lines } = capturingLogger();
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox(testConfig(), logger);
  });
  afterAll(() => sandbox.close());

  it.each([
    ['closes', (socket: Socket) => socket.destroy()],
    ['resets', (socket: Socket) => socket.resetAndDestroy()],
  ])('logs a client that %s its connection mid-body at debug level, not as an error', async (_how, leave) => {
    const socket = open(sandbox.origin);
    const body = JSON.stringify({ reference: 'never finished' });
    // Expect: 100-continue makes the server say when the request has reached the app.
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.once('data', (chunk) => {
        expect(String(chunk)).toMatch(/^HTTP\/1\.1 100 Continue/);
        socket.write(body.slice(0, 10), () => resolve());
      });
      socket.write(
        'POST /v1/shipments HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n' +
          `Authorization: Bearer ${DEFAULT_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
    });
    const before = lines.length;
    leave(socket);

    await vi.waitFor(() =>
      expect(lines.slice(before).some((l) => l.status === 499 && l.path === '/v1/shipments')).toBe(true),
    );
    const line = lines.slice(before).find((l) => l.status === 499)!;
    expect(line.level).toBe(20);
    expect(problems(lines)).toEqual([]);
  });
});
