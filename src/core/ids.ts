import { randomFillSync } from 'node:crypto';
import { ulid } from 'ulid';

/** Every identifier prefix the API hands out. */
export type IdPrefix =
  | 'shp'
  | 'lbl'
  | 'evt'
  | 'wh'
  | 'cur'
  | 'key'
  | 'acct'
  | 'dlv'
  | 'eml'
  | 'flt'
  | 'job'
  | 'req';

/**
 * Cryptographic random bytes, drawn from a pool refilled 4 KiB at a time. `ulid`'s own generator asks
 * the system for one byte per character, which made identifiers the costliest part of a write.
 */
const pool = new Uint8Array(4096);
let next = pool.length;
function randomFraction(): number {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  return (pool[next++] as number) / 256;
}

/**
 * `<prefix>_<ULID>`: the time part comes from the account's clock, so identifiers sort with
 * `created_at`; the 80 random bits make them unguessable.
 */
export function newId(prefix: IdPrefix, atMs: number): string {
  return `${prefix}_${ulid(atMs, randomFraction)}`;
}
