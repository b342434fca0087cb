import type { Sql } from './sql.js';

/**
 * Holds the account for the rest of the transaction `tx`, so that transactions which count what the
 * account has before adding to it (its caps: core/caps.ts) run one after another, and two creations
 * racing at 99 never make 101.
 *
 * PostgreSQL: the account's row, `FOR NO KEY UPDATE`. That waits for another holder, and for a change
 * of the account's settings or clock, but not for the rows that merely name the account (an insert's
 * foreign key takes `FOR KEY SHARE`, which it does not block), so the account's other writes go on.
 * SQLite: nothing to take, since a transaction there holds the one connection until it ends.
 */
export async function holdAccount(tx: Sql, accountId: string): Promise<void> {
  if (tx.engine === 'postgres')
    await tx.run('SELECT 1 FROM accounts WHERE id = ? FOR NO KEY UPDATE', [accountId]);
}
