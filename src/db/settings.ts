import { randomBytes } from 'node:crypto';
import type { Sql } from './sql.js';

/**
 * The sandbox's own settings (the `settings` table): values made once, at the first start, and kept
 * with the data, such as the secret that signs label URLs. Replicas over one database share them.
 */
export class SettingsStore {
  constructor(private readonly db: Sql) {}

  /** The secret kept under `key` (32 random bytes, hex), made the first time it is asked for. */
  async secret(key: string): Promise<Buffer> {
    // Whoever inserts first wins; everyone reads what won.
    await this.db.run('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT DO NOTHING', [
      key,
      randomBytes(32).toString('hex'),
    ]);
    return Buffer.from(
      (await this.db.value<string>('SELECT value FROM settings WHERE key = ?', [key])) as string,
      'hex',
    );
  }
}
