import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { addAnswerHeaders, answerHeaders, answerWith } from '../src/http/answer-headers.js';
import type { AppEnv } from '../src/http/context.js';

/**
 * The headers every answer carries: built into the API's JSON answers as one plain object, set on
 * any other answer afterwards, whichever answer the client finally gets.
 */
function app() {
  const hono = new Hono<AppEnv>();
  hono.onError((error, c) => c.json({ error: String(error) }, 500));
  hono.use(answerHeaders());
  hono.use(async (c, next) => {
    addAnswerHeaders(c, { 'x-ratelimit-limit': '120' });
    await next();
    if (c.req.query('fail_after') !== undefined) throw new Error('failed after the answer was made');
  });
  hono.get('/plain', (c) => answerWith(c, '{"ok":true}', 200, 'application/json'));
  hono.get('/hono', (c) => c.json({ ok: true }));
  return hono;
}

const expected = { 'x-content-type-options': 'nosniff', 'x-ratelimit-limit': '120' };

describe('answer headers', () => {
  it('are built into an answer made with them, with its length', async () => {
    const answer = await app().request('/plain');
    expect(answer.status).toBe(200);
    expect(Object.fromEntries(answer.headers)).toEqual({
      'content-type': 'application/json',
      'content-length': '11',
      ...expected,
    });
  });

  it('are set on an answer made any other way', async () => {
    const answer = await app().request('/hono');
    expect(Object.fromEntries(answer.headers)).toMatchObject(expected);
  });

  it('are set on the answer that replaced one made with them, which keeps no length of the first', async () => {
    const answer = await app().request('/plain?fail_after');
    expect(answer.status).toBe(500);
    expect(Object.fromEntries(answer.headers)).toMatchObject(expected);
    const length = String(Buffer.byteLength(await answer.text()));
    expect(answer.headers.get('content-length') ?? length).toBe(length);
  });
});
