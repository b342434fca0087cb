import { describe, expect, it } from 'vitest';
import { PageCache } from '../src/shipments/page-cache.js';
import { createTestSandbox } from './helpers.js';

describe('pages of the list, read again', () => {
  it('answer every write of the account since, whichever module wrote it', async () => {
    const sandbox = await createTestSandbox();
    const page = async (query = '') => (await sandbox.call('GET', `/v1/shipments${query}`)).text;
    const statuses = async () => JSON.parse(await page()).data.map((s: { status: string }) => s.status);
    const { id } = await sandbox.newShipment();
    expect(await page()).toBe(await page());
    const other = await sandbox.newAccount();
    await sandbox.newShipment({}, other);
    // Another account's write changes nothing here, and the page is still the one read before.
    expect(await statuses()).toEqual(['created']);

    const steps: [string, () => Promise<unknown>, string[]][] = [
      ['a new shipment', () => sandbox.newShipment(), ['created', 'created']],
      [
        'a label',
        () => sandbox.call('POST', '/v1/labels', { body: { shipment_id: id } }),
        ['created', 'label_generated'],
      ],
      [
        'a tracking status',
        () => sandbox.call('POST', `/_sandbox/shipments/${id}/advance`, { body: { status: 'in_transit' } }),
        ['created', 'in_transit'],
      ],
      ['a reset', () => sandbox.call('POST', '/_sandbox/reset'), []],
    ];
    for (const [what, write, expected] of steps) {
      const before = await page();
      await write();
      expect(await statuses(), what).toEqual(expected);
      expect(await page(), what).not.toBe(before);
    }
  });

  it('and a shipment read by id again answer every write since, in its own account only', async () => {
    const sandbox = await createTestSandbox();
    const { id } = await sandbox.newShipment();
    const read = async () => (await sandbox.call('GET', `/v1/shipments/${id}`)).json;
    expect((await read()).status).toBe('created');
    const other = await sandbox.newAccount();
    expect((await sandbox.call('GET', `/v1/shipments/${id}`, { key: other })).status).toBe(404);

    const steps: [string, () => Promise<unknown>, string][] = [
      ['a label', () => sandbox.call('POST', '/v1/labels', { body: { shipment_id: id } }), 'label_generated'],
      [
        'a tracking status',
        () => sandbox.call('POST', `/_sandbox/shipments/${id}/advance`, { body: { status: 'in_transit' } }),
        'in_transit',
      ],
    ];
    for (const [what, write, expected] of steps) {
      expect(await read(), what).toEqual(await read());
      await write();
      expect((await read()).status, what).toBe(expected);
    }
    expect((await read()).tracking_number).toMatch(/\w/);
    await sandbox.call('POST', '/_sandbox/reset');
    expect((await sandbox.call('GET', `/v1/shipments/${id}`)).status).toBe(404);
  });

  it('are kept once asked for twice: a walk with the cursor, each page once, keeps none', () => {
    const cache = new PageCache(1000);
    for (let page = 0; page < 20; page++) cache.offer(`walk ${page}`, 1, `page ${page}`);
    for (let page = 0; page < 20; page++) expect(cache.get(`walk ${page}`, 1)).toBeUndefined();
    // Polled: the second answer is kept, and a kept page is kept again as its account changes.
    cache.offer('first page', 1, 'v1');
    expect(cache.get('first page', 1)).toBeUndefined();
    cache.offer('first page', 1, 'v1');
    expect(cache.get('first page', 1)).toBe('v1');
    cache.offer('first page', 2, 'v2');
    expect([cache.get('first page', 1), cache.get('first page', 2)]).toEqual([undefined, 'v2']);
    // The pages asked for once are noted within a bound: past it they are forgotten, so a walk of
    // any length keeps a bounded memory, and a page asked for again only later is kept then.
    for (let page = 0; page < 10_000; page++) cache.offer(`long walk ${page}`, 1, 'p');
    cache.offer('walk 3', 1, 'page 3');
    expect(cache.get('walk 3', 1)).toBeUndefined();
    cache.offer('walk 3', 1, 'page 3');
    expect(cache.get('walk 3', 1)).toBe('page 3');
  });

  it('are kept within a budget, the oldest making way, and never across a change', () => {
    const cache = new PageCache(10);
    cache.set('a', 1, 'aaaa');
    cache.set('b', 1, 'bbbb');
    expect([cache.get('a', 1), cache.get('a', 2), cache.get('b', 1)]).toEqual(['aaaa', undefined, 'bbbb']);
    cache.set('c', 1, 'cccc');
    expect([cache.get('a', 1), cache.get('b', 1), cache.get('c', 1)]).toEqual([undefined, 'bbbb', 'cccc']);
    cache.set('b', 2, 'bb');
    expect([cache.get('b', 1), cache.get('b', 2)]).toEqual([undefined, 'bb']);
    cache.set('d', 1, 'x'.repeat(11));
    expect([cache.get('d', 1), cache.get('c', 1)]).toEqual([undefined, 'cccc']);
  });
});
