import { beforeAll, describe, expect, it } from 'vitest';
import { createTestSandbox, expectError, type TestSandbox } from './helpers.js';

/**
 * `GET /v1/webhooks`, its `/_sandbox` twin and `GET /_sandbox/faults` page as `GET /v1/shipments`
 * does: `limit` (1 to 100, 20 by default), `cursor`, `meta`. One sandbox; an account per test.
 */
let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await createTestSandbox();
});

const webhook = (i: number) => ({
  url: `http://127.0.0.1:9/hooks/${i}`,
  events: ['shipment.created'],
  secret: 'whsec_0123456789abcdef',
});
const fault = (i: number) => ({ path: `/v1/nowhere/${i}`, status: 503 });

interface Listed {
  data: { id: string }[];
  meta: { total: number; cursor: string | null; has_more: boolean };
}

/** Every page of `path` at `limit` a page, following `meta.cursor` to the end. */
async function walk(key: string, path: string, limit: number): Promise<Listed[]> {
  const pages: Listed[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const answer = await sandbox.call('GET', `${path}?${query}`, { key });
    expect(answer.status, answer.text).toBe(200);
    pages.push(answer.json as Listed);
    cursor = (answer.json as Listed).meta.cursor;
  } while (cursor !== null && pages.length < 20);
  return pages;
}

/** Makes `count` things at `path` on a frozen clock: some at one instant, the rest a minute later. */
async function make(key: string, path: string, body: (i: number) => object, count: number) {
  await sandbox.call('POST', '/_sandbox/clock', { key, body: { frozen: true } });
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    if (i === Math.floor(count / 2))
      await sandbox.call('POST', '/_sandbox/clock/advance', { key, body: { by: '1m' } });
    const made = await sandbox.call('POST', path, { key, body: body(i) });
    expect(made.status, made.text).toBe(201);
    ids.push(made.json.id);
  }
  return ids;
}

/** The cursor with one character of its signed place changed. */
const altered = (cursor: string) =>
  `${cursor.slice(0, 10)}${cursor[10] === 'A' ? 'B' : 'A'}${cursor.slice(11)}`;

/** A list, where its items are made and deleted, and a list of another kind beside it. */
interface PagedList {
  list: string;
  create: string;
  remove: string;
  body: (i: number) => object;
  other: { list: string; body: (i: number) => object };
}
const WEBHOOKS = { create: '/_sandbox/webhooks', remove: '/v1/webhooks', body: webhook };
const FAULTS = {
  list: '/_sandbox/faults',
  create: '/_sandbox/faults',
  remove: '/_sandbox/faults',
  body: fault,
};
const LISTS: [string, PagedList][] = [
  ['GET /v1/webhooks', { ...WEBHOOKS, list: '/v1/webhooks', other: FAULTS }],
  ['GET /_sandbox/webhooks', { ...WEBHOOKS, list: '/_sandbox/webhooks', other: FAULTS }],
  ['GET /_sandbox/faults', { ...FAULTS, other: { ...WEBHOOKS, list: '/_sandbox/webhooks' } }],
];

describe.each(LISTS)('%s', (_name, { list, create, remove, body, other }) => {
  it('pages newest first, by time then creation order, with the contract meta', async () => {
    const key = await sandbox.newAccount();
    const ids = await make(key, create, body, 25);
    const newestFirst = [...ids].reverse();

    const pages = await walk(key, list, 10);
    expect(pages.map((page) => page.data.length)).toEqual([10, 10, 5]);
    expect(pages.flatMap((page) => page.data.map((item) => item.id))).toEqual(newestFirst);
    expect(pages.map((page) => page.meta.total)).toEqual([25, 25, 25]);
    expect(pages.map((page) => page.meta.has_more)).toEqual([true, true, false]);
    expect(pages[0]?.meta.cursor).toMatch(/^cur_[A-Za-z0-9_-]{43}$/);

    const first = (await sandbox.call('GET', list, { key })).json as Listed;
    expect(first.data.map((item) => item.id)).toEqual(newestFirst.slice(0, 20));
    expect(first.meta).toMatchObject({ total: 25, has_more: true });

    // One made between two pages neither shifts nor repeats what follows.
    await sandbox.call('POST', create, { key, body: body(99) });
    const next = (await sandbox.call('GET', `${list}?limit=10&cursor=${pages[0]?.meta.cursor}`, { key }))
      .json as Listed;
    expect(next.data.map((item) => item.id)).toEqual(newestFirst.slice(10, 20));
    expect(next.meta.total).toBe(26);
  });

  it('refuses a bad limit, and a cursor it did not give for this list and account', async () => {
    const key = await sandbox.newAccount();
    await make(key, create, body, 3);
    for (const limit of ['0', '101', 'abc', '2.5'])
      expectError(
        await sandbox.call('GET', `${list}?limit=${limit}`, { key }),
        400,
        'invalid_parameter',
        'limit',
      );
    const cursor = (await sandbox.call('GET', `${list}?limit=1`, { key })).json.meta.cursor as string;
    expect((await sandbox.call('GET', `${list}?limit=1&cursor=${cursor}`, { key })).status).toBe(200);

    const stranger = await sandbox.newAccount();
    await sandbox.newShipment({}, key);
    await sandbox.newShipment({}, key);
    await sandbox.call('POST', other.list, { key, body: other.body(0) });
    await sandbox.call('POST', other.list, { key, body: other.body(1) });
    const cursorOf = async (path: string) =>
      (await sandbox.call('GET', `${path}?limit=1`, { key })).json.meta.cursor as string;
    for (const [who, given] of [
      [key, 'cur_made-up'],
      [key, altered(cursor)],
      [stranger, cursor],
      [key, await cursorOf('/v1/shipments')],
      [key, await cursorOf(other.list)],
    ] as const) {
      expect(given).toMatch(/^cur_/);
      expectError(
        await sandbox.call('GET', `${list}?cursor=${encodeURIComponent(given)}`, { key: who }),
        400,
        'invalid_parameter',
        'cursor',
      );
    }
  });

  it('leaves out what was deleted, from the page and from the total', async () => {
    const key = await sandbox.newAccount();
    const ids = await make(key, create, body, 3);
    expect((await sandbox.call('DELETE', `${remove}/${ids[1]}`, { key })).status).toBe(200);
    const listed = (await sandbox.call('GET', list, { key })).json as Listed;
    expect(listed.data.map((item) => item.id)).toEqual([ids[2], ids[0]]);
    expect(listed.meta).toEqual({ total: 2, cursor: null, has_more: false });
  });
});
