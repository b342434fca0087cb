import { ulid } from 'ulid';

/** Every identifier prefix the API hands out. */
export type IdPrefix = 'shp' | 'lbl' | 'evt' | 'wh' | 'cur' | 'key' | 'acct' | 'dlv' | 'eml' | 'flt' | 'job';

/**
 * `<prefix>_<ULID>`: the time part comes from the account's clock, so identifiers sort with
 * `created_at`; the 80 random bits make them unguessable.
 */
export function newId(prefix: IdPrefix, atMs: number): string {
  return `${prefix}_${ulid(atMs)}`;
}

const ID_SUFFIX = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** Whether `value` has the shape of an identifier with this prefix (it may still not exist). */
export function isId(prefix: IdPrefix, value: string): boolean {
  return value.startsWith(`${prefix}_`) && ID_SUFFIX.test(value.slice(prefix.length + 1));
}
