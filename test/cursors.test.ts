import { describe, expect, it } from 'vitest';
import { CursorCodec } from '../src/core/paging.js';

describe('cursors', () => {
  const secret = Buffer.alloc(32, 9);
  const place = { createdAt: Date.UTC(2026, 10, 22, 8), seq: 41 };

  it('are the same text for the same place, whether handed out lately or worked out afresh', () => {
    const codec = new CursorCodec(secret);
    const first = codec.encode('acct_a', place);
    expect(codec.encode('acct_a', { ...place })).toBe(first);
    expect(new CursorCodec(secret).encode('acct_a', place)).toBe(first);
    // After more than the codec keeps, the oldest is worked out again, to the same text.
    for (let seq = 0; seq < 2000; seq++) codec.encode('acct_a', { createdAt: 0, seq });
    expect(codec.encode('acct_a', place)).toBe(first);
  });

  it('read back the place they name, for their own account only', () => {
    const codec = new CursorCodec(secret);
    const cursor = codec.encode('acct_a', place);
    expect(codec.decode('acct_a', cursor)).toEqual(place);
    expect(new CursorCodec(secret).decode('acct_a', cursor)).toEqual(place);
    for (const reader of [codec, new CursorCodec(secret)])
      expect(() => reader.decode('acct_b', cursor)).toThrow(/not a cursor this API returned/);
    expect(() => new CursorCodec(Buffer.alloc(32, 8)).decode('acct_a', cursor)).toThrow(
      /not a cursor this API returned/,
    );
  });
});
