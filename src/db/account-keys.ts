/**
 * Each account's small integer key (the `account_keys` table, migration 16), which the indexes of the
 * tables that grow with an account lead with in place of its 31-character id: a byte or two in each
 * entry instead of 32. A trigger gives every account its key as the account is made.
 *
 * Stores look the key up inside their own statements, with this expression in place of a value
 * (`WHERE account_key = ${accountKeyOf('@accountId')}`): SQLite reads it once a statement, from an
 * index of a table of a row an account, and nothing is kept in memory that a rolled-back transaction
 * could leave wrong. A statement for an id that names no account finds no rows, and a write for one
 * fails on the row's foreign key to the account, as it always did.
 */
export function accountKeyOf(parameter: string): string {
  return `(SELECT key FROM account_keys WHERE account_id = ${parameter})`;
}
