import { afterEach, describe, expect, it, vi } from 'vitest';
import { SCOPES } from '../src/core/actor.js';
import { SessionHolder, type StreamSink } from '../src/listeners/holder.js';
import { ListenerStore } from '../src/listeners/store.js';
import { capturingLogger, createTestSandbox, DEFAULT_KEY, type TestSandbox } from './helpers.js';

/**
 * The process's hold on listen sessions, with a stream whose client stopped reading: its sink takes
 * what is sent and never finishes closing, as a stream whose peer's buffers are full never does. The
 * sandbox's own holder does not run (the sandbox is not started); this one does, on its fake clock.
 */
const HEARTBEAT_MS = 100;
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** A stream that takes everything and never ends: `close` is noted, and nothing follows it. */
function stalledSink() {
  const sent: string[] = [];
  let closes = 0;
  const sink: StreamSink = {
    event: (name) => void sent.push(name),
    comment: () => undefined,
    close: () => {
      closes += 1;
    },
  };
  return { sink, sent, closes: () => closes };
}

async function holding(sandbox: TestSandbox) {
  const service = sandbox.ports.listeners.service;
  const holder = new SessionHolder({
    db: sandbox.db,
    store: new ListenerStore(),
    service,
    eventBody: (eventId) => sandbox.stores.events.body(sandbox.db, eventId),
    timeoutMs: 1000,
    heartbeatMs: HEARTBEAT_MS,
    roundMs: 20,
    realNow: () => sandbox.wall.now,
    logger: capturingLogger().logger,
  });
  stops.push(() => holder.stop());
  const opened = await sandbox.call('POST', '/_sandbox/listeners', { body: {} });
  expect(opened.status).toBe(201);
  const accountId = (await sandbox.call('GET', '/_sandbox/account')).json.id as string;
  const caller = { accountId, keyId: 'key_test', scopes: [...SCOPES], now: sandbox.wall.now };
  const connection = await holder.take(caller, opened.json.id);
  const stream = stalledSink();
  holder.open(connection, stream.sink);
  holder.start();
  return { connection, stream, sessionId: opened.json.id as string };
}

describe('a session held by this process', () => {
  it('forgets the deliveries that are answered, keeping only what is still owed', async () => {
    const sandbox = await createTestSandbox({}, { listenerTiming: { heartbeatMs: HEARTBEAT_MS } });
    await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
    const { connection, stream, sessionId } = await holding(sandbox);
    for (let i = 0; i < 3; i++)
      expect(
        (await sandbox.call('POST', '/_sandbox/events/trigger', { body: { event: 'label.generated' } }))
          .status,
      ).toBe(201);
    // The advance hands them over and waits for their answers, which come below.
    const advancing = sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: 0 } });
    await vi.waitFor(() => expect(stream.sent.filter((name) => name === 'delivery')).toHaveLength(3));
    expect(connection.sent.size).toBe(3);

    const deliveries = (await sandbox.call('GET', `/_sandbox/listeners/${sessionId}/deliveries`)).json.data;
    for (const delivery of deliveries) {
      const answered = await sandbox.call(
        'POST',
        `/_sandbox/listeners/${sessionId}/deliveries/${delivery.id}/outcome`,
        { key: DEFAULT_KEY, body: { response_status: 200, duration_ms: 1 } },
      );
      expect(answered.status).toBe(200);
    }
    expect((await advancing).status).toBe(200);
    await vi.waitFor(() => expect(connection.sent.size).toBe(0));
    expect(stream.sent.filter((name) => name === 'delivery')).toHaveLength(3);
  });

  it('lets go at once of a connection it closes, though its stream never finishes, and closes it once', async () => {
    const sandbox = await createTestSandbox({}, { listenerTiming: { heartbeatMs: HEARTBEAT_MS } });
    const { connection, stream, sessionId } = await holding(sandbox);
    // The command answers no heartbeat for longer than two and a half of them: its connection is dead.
    sandbox.wall.now += HEARTBEAT_MS * 10;
    await vi.waitFor(() => expect(connection.released).toBe(true));
    expect(stream.closes()).toBe(1);
    const listed = (await sandbox.call('GET', '/_sandbox/listeners')).json.data;
    expect(listed.find((session: { id: string }) => session.id === sessionId)?.connected).toBe(false);

    // Ended by a reset afterwards: nothing more is sent down the dead connection, round after round.
    expect((await sandbox.call('POST', '/_sandbox/reset')).status).toBe(200);
    sandbox.wall.now += 60_000;
    await stops.splice(0).reduce((done, stop) => done.then(stop), Promise.resolve());
    expect(stream.closes()).toBe(1);
    expect(stream.sent.filter((name) => name === 'ended')).toEqual([]);
  });
});
