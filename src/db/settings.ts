import { randomBytes } from 'node:crypto';
import type { Db } from './database.js';

/**
 * The sandbox's own settings (the `settings` table): values made once, at the first start, and kept
 * with the data, such as the secret that signs label URLs.
 */
export class SettingsStore {
  private readonly insertStatement;
  private readonly selectStatement;

  constructor(db: Db) {
    this.insertStatement = db.prepare(
      'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT DO NOTHING',
    );
    this.selectStatement = db.prepare<[string], string>('SELECT value FROM settings WHERE key = ?').pluck();
  }

  /** The secret kept under `key` (32 random bytes, hex), made the first time it is asked for. */
  secret(key: string): Buffer {
    this.insertStatement.run(key, randomBytes(32).toString('hex'));
    return Buffer.from(this.selectStatement.get(key) as string, 'hex');
  }
}
