import { describe, expect, it } from 'vitest';
import { createTestSandbox, expectError, shipmentRequest } from './helpers.js';

describe('/_sandbox/clock', () => {
  it('starts at real time, running at speed 1', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('GET', '/_sandbox/clock');
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ now: '2026-11-22T08:00:00Z', speed: 1, frozen: false });
  });

  it('runs new accounts at --clock-speed', async () => {
    const sandbox = await createTestSandbox({ clockSpeed: 60 });
    const key = await sandbox.newAccount();
    sandbox.wall.now += 10_000;
    expect((await sandbox.call('GET', '/_sandbox/clock', { key })).json).toMatchObject({
      now: '2026-11-22T08:10:00Z',
      speed: 60,
    });
  });

  it('follows the wall clock at its speed, and stands still when frozen', async () => {
    const sandbox = await createTestSandbox();
    expect((await sandbox.call('POST', '/_sandbox/clock', { body: { speed: 3600 } })).json).toEqual({
      now: '2026-11-22T08:00:00Z',
      speed: 3600,
      frozen: false,
    });
    sandbox.wall.now += 2000;
    expect((await sandbox.call('GET', '/_sandbox/clock')).json.now).toBe('2026-11-22T10:00:00Z');

    const frozen = await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
    expect(frozen.json).toEqual({ now: '2026-11-22T10:00:00Z', speed: 3600, frozen: true });
    sandbox.wall.now += 60_000;
    expect((await sandbox.call('GET', '/_sandbox/clock')).json.now).toBe('2026-11-22T10:00:00Z');
  });

  it('advances by a duration or to an instant, and answers with what ran', async () => {
    const sandbox = await createTestSandbox();
    await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
    const by = await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '2h' } });
    expect(by.status).toBe(200);
    expect(by.json).toEqual({ now: '2026-11-22T10:00:00Z', speed: 1, frozen: true, ran: [] });
    const seconds = await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: 90 } });
    expect(seconds.json.now).toBe('2026-11-22T10:01:30Z');
    const to = await sandbox.call('POST', '/_sandbox/clock/advance', {
      body: { to: '2026-12-01T00:00:00Z' },
    });
    expect(to.json.now).toBe('2026-12-01T00:00:00Z');
  });

  it('never moves backwards', async () => {
    const sandbox = await createTestSandbox();
    const past = await sandbox.call('POST', '/_sandbox/clock/advance', {
      body: { to: '2026-11-21T00:00:00Z' },
    });
    expectError(past, 422, 'invalid_field', 'to');
    expect(past.json.error.message).toContain('2026-11-21T00:00:00Z is before');
    expectError(
      await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '-1h' } }),
      422,
      'invalid_field',
      'by',
    );
    expect((await sandbox.call('GET', '/_sandbox/clock')).json.now).toBe('2026-11-22T08:00:00Z');
  });

  it.each([
    [{}, 422, 'missing_field', 'by'],
    [{ by: '1h', to: '2027-01-01T00:00:00Z' }, 422, 'invalid_field', 'to'],
    [{ by: 'soon' }, 422, 'invalid_field', 'by'],
    [{ by: true }, 422, 'invalid_field', 'by'],
    [{ to: 'tomorrow' }, 422, 'invalid_field', 'to'],
    [{ to: '2027-02-30' }, 422, 'invalid_field', 'to'],
    [{ until: '1h' }, 422, 'invalid_field', 'until'],
  ])('rejects the advance %j', async (body, status, code, field) => {
    const sandbox = await createTestSandbox();
    expectError(await sandbox.call('POST', '/_sandbox/clock/advance', { body }), status, code, field);
  });

  it.each([
    [{ speed: 0 }, 'speed'],
    [{ speed: -1 }, 'speed'],
    [{ speed: 'fast' }, 'speed'],
    [{ speed: 2_000_000 }, 'speed'],
    [{ frozen: 'yes' }, 'frozen'],
    [{ pace: 2 }, 'pace'],
  ])('rejects the clock settings %j', async (body, field) => {
    const sandbox = await createTestSandbox();
    expectError(await sandbox.call('POST', '/_sandbox/clock', { body }), 422, 'invalid_field', field);
  });

  it("keeps each account's clock to itself", async () => {
    const sandbox = await createTestSandbox();
    const other = await sandbox.newAccount();
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '30d' } });
    expect((await sandbox.call('GET', '/_sandbox/clock')).json.now).toBe('2026-12-22T08:00:00Z');
    expect((await sandbox.call('GET', '/_sandbox/clock', { key: other })).json.now).toBe(
      '2026-11-22T08:00:00Z',
    );
  });

  it('stamps what the account creates with its clock', async () => {
    const sandbox = await createTestSandbox();
    await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { to: '2027-03-01T12:34:56Z' } });
    const created = await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() });
    expect(created.json.created_at).toBe('2027-03-01T12:34:56Z');
    const cancelled = await sandbox.call('DELETE', `/v1/shipments/${created.json.id}`);
    expect(cancelled.json.cancelled_at).toBe('2027-03-01T12:34:56Z');
    const events = await sandbox.call('GET', '/_sandbox/events');
    expect(events.json.data.map((e: { created_at: string }) => e.created_at)).toEqual([
      '2027-03-01T12:34:56Z',
      '2027-03-01T12:34:56Z',
    ]);
  });

  it('needs a key', async () => {
    const sandbox = await createTestSandbox();
    expectError(await sandbox.call('GET', '/_sandbox/clock', { key: null }), 401, 'missing_api_key');
  });
});
