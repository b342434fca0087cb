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
  | 'lsn'
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

/**
 * Half the random part of an identifier made later (`idFromDraws`): eight of its characters, five
 * random bits each, as one number that a typed array can hold. An identifier made from the same two
 * draws is the same whenever it is made, and is spelled as `newId` would have spelled it from the
 * same bytes.
 */
export function drawIdHalf(): number {
  let bits = 0;
  for (let i = 0; i < 8; i++) bits = bits * 32 + Math.floor(randomFraction() * 32);
  return bits;
}

/** The identifier of `newId`, its random part from two draws of `drawIdHalf`. */
export function idFromDraws(prefix: IdPrefix, atMs: number, first: number, second: number): string {
  let drawn = 0;
  const replay = () => {
    const half = drawn < 8 ? first : second;
    const bits = Math.floor(half / 32 ** (7 - (drawn % 8))) % 32;
    drawn += 1;
    return bits / 32;
  };
  return `${prefix}_${ulid(atMs, replay)}`;
}

const CROCKFORD_BASE32 = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** The ULID's random part: its last 16 characters. */
const ULID_RANDOM_CHARS = 16;

/**
 * The identifier of the item `ahead` places after the job `id` in its chain: the ULID's random part
 * counted on by `ahead`, as a monotonic ULID generator numbers identifiers made in the same
 * millisecond (past the largest value, it wraps around).
 */
export function chainedId(id: string, ahead: number): string {
  if (ahead === 0) return id;
  const chars = [...id];
  let carry = ahead;
  for (let i = chars.length - 1; carry > 0 && i >= chars.length - ULID_RANDOM_CHARS; i--) {
    const sum = CROCKFORD_BASE32.indexOf(chars[i] as string) + carry;
    chars[i] = CROCKFORD_BASE32[sum % 32] as string;
    carry = Math.floor(sum / 32);
  }
  return chars.join('');
}
