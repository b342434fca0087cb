import { type Page, type PagePosition, pageOf } from '../core/paging.js';
import { afterParams, afterPlace, newestFirst } from '../db/paging.js';
import { dialect, type Sql } from '../db/sql.js';
import type { EventType } from '../events/schema.js';

export type WebhookStatus = 'active' | 'failed' | 'disabled';

export interface WebhookRecord {
  id: string;
  accountId: string;
  url: string;
  events: EventType[];
  secret: string;
  status: WebhookStatus;
  createdAt: number;
}

interface WebhookRow {
  /** Only where a page reads it: the row's place among those of the same instant. */
  seq?: number;
  id: string;
  account_id: string;
  url: string;
  events: string;
  secret: string;
  status: WebhookStatus;
  created_at: number;
}

const toWebhook = (row: WebhookRow): WebhookRecord => ({
  id: row.id,
  accountId: row.account_id,
  url: row.url,
  events: JSON.parse(row.events) as EventType[],
  secret: row.secret,
  status: row.status,
  createdAt: row.created_at,
});

/** The statements of a page of the account's webhooks, newest first: SQLite's rowid is its `seq`. */
function pageStatements() {
  const page = (engine: 'sqlite' | 'postgres', afterCursor: boolean) => {
    const seq = engine === 'sqlite' ? 'rowid' : 'seq';
    const after = afterCursor ? ` AND ${afterPlace(seq)}` : '';
    return `SELECT *, ${seq} AS seq FROM webhooks WHERE account_id = @accountId AND deleted_at IS NULL${after}
      ${newestFirst(seq)} LIMIT @take`;
  };
  return {
    first: { sqlite: page('sqlite', false), postgres: page('postgres', false) },
    after: { sqlite: page('sqlite', true), postgres: page('postgres', true) },
  };
}

const SQL = {
  markDeleted: "UPDATE webhooks SET deleted_at = ?, status = 'disabled' WHERE id = ?",
  selectAnyWebhook: 'SELECT * FROM webhooks WHERE id = ?',
  insertWebhook: `INSERT INTO webhooks (id, account_id, url, events, secret, status, created_at)
    VALUES (@id, @accountId, @url, @events, @secret, @status, @createdAt)`,
  updateWebhook:
    'UPDATE webhooks SET url = @url, events = @events, secret = @secret, status = @status WHERE id = @id',
  // Over PostgreSQL a second writer waits for the first's row, then finds it failed already.
  failActive: "UPDATE webhooks SET status = 'failed' WHERE id = ? AND status = 'active'",
  selectWebhook: 'SELECT * FROM webhooks WHERE id = ? AND account_id = ? AND deleted_at IS NULL',
  // Among webhooks made at the same instant, the later first: SQLite's rowid, PostgreSQL's seq.
  selectWebhooks: {
    sqlite:
      'SELECT * FROM webhooks WHERE account_id = ? AND deleted_at IS NULL ORDER BY created_at DESC, rowid DESC',
    postgres:
      'SELECT * FROM webhooks WHERE account_id = ? AND deleted_at IS NULL ORDER BY created_at DESC, seq DESC',
  },
  // Pages of the same order, one statement with a cursor's place and one without.
  selectPage: pageStatements(),
  countWebhooks: 'SELECT count(*) FROM webhooks WHERE account_id = ? AND deleted_at IS NULL',
  // `events` is a JSON array of names.
  selectSubscribers: {
    sqlite: `SELECT w.* FROM webhooks w, json_each(w.events) j
      WHERE w.account_id = @accountId AND w.status = 'active' AND w.deleted_at IS NULL AND j.value = @type
      ORDER BY w.created_at, w.rowid`,
    postgres: `SELECT w.* FROM webhooks w
      WHERE w.account_id = @accountId AND w.status = 'active' AND w.deleted_at IS NULL
        AND w.events::jsonb @> jsonb_build_array(CAST(@type AS TEXT))
      ORDER BY w.created_at, w.seq`,
  },
  // After the attempts' (AttemptStore.deleteAccount): e-mails, then the webhooks.
  deleteAccount: ['emails', 'webhooks'].map((table) => `DELETE FROM ${table} WHERE account_id = ?`),
  insertEmail: `INSERT INTO emails (id, account_id, recipient, subject, body, created_at)
    VALUES (@id, @accountId, @recipient, @subject, @body, @createdAt)`,
  selectEmails:
    'SELECT id, recipient, subject, body, created_at FROM emails WHERE account_id = ? ORDER BY seq DESC LIMIT ?',
};

/**
 * Over PostgreSQL, read with each event's INSERT (`EventStore.subscribe`): whether any webhook of the
 * event's account takes its type, as `selectSubscribers` would find one.
 */
export const ANY_SUBSCRIBED_WEBHOOK = `EXISTS (SELECT 1 FROM webhooks w
  WHERE w.account_id = events.account_id AND w.status = 'active' AND w.deleted_at IS NULL
    AND w.events::jsonb @> jsonb_build_array(events.type))`;

/**
 * The webhooks and the e-mail outbox (`webhooks`, `emails`); their delivery attempts are the
 * AttemptStore's. Each method runs on the `q` it is given: the database, or the transaction of the
 * change it is part of.
 */
export class WebhookStore {
  async insert(tx: Sql, webhook: WebhookRecord): Promise<WebhookRecord> {
    await tx.run(SQL.insertWebhook, { ...webhook, events: JSON.stringify(webhook.events) });
    return webhook;
  }

  async save(tx: Sql, webhook: WebhookRecord): Promise<void> {
    await tx.run(SQL.updateWebhook, { ...webhook, events: JSON.stringify(webhook.events) });
  }

  /** Marks an active webhook failed; false when it was not active (another send's failure got there first). */
  async failActive(tx: Sql, id: string): Promise<boolean> {
    return (await tx.run(SQL.failActive, [id])) > 0;
  }

  /**
   * Deleted webhooks keep their row, disabled, so a send still on the wire finds it and neither
   * retries nor alerts; the API no longer shows it. Its pending attempts are the caller's to cancel.
   */
  async delete(tx: Sql, webhook: WebhookRecord, at: number): Promise<void> {
    await tx.run(SQL.markDeleted, [at, webhook.id]);
  }

  async find(q: Sql, accountId: string, id: string): Promise<WebhookRecord | undefined> {
    const row = await q.get<WebhookRow>(SQL.selectWebhook, [id, accountId]);
    return row && toWebhook(row);
  }

  async findById(q: Sql, id: string): Promise<WebhookRecord | undefined> {
    const row = await q.get<WebhookRow>(SQL.selectAnyWebhook, [id]);
    return row && toWebhook(row);
  }

  async list(q: Sql, accountId: string): Promise<WebhookRecord[]> {
    return (await q.all<WebhookRow>(dialect(q, SQL.selectWebhooks), [accountId])).map(toWebhook);
  }

  /** One page of the account's webhooks, newest first, after `after` when given. */
  async page(
    q: Sql,
    accountId: string,
    limit: number,
    after: PagePosition | undefined,
  ): Promise<Page<WebhookRecord>> {
    const statement = dialect(q, after ? SQL.selectPage.after : SQL.selectPage.first);
    const rows = await q.all<WebhookRow>(statement, { accountId, take: limit + 1, ...afterParams(after) });
    const page = pageOf(rows, limit, (row) => ({ createdAt: Number(row.created_at), seq: Number(row.seq) }));
    return { ...page, rows: page.rows.map(toWebhook) };
  }

  /** How many webhooks the account has (deleted ones are gone from it). */
  async count(q: Sql, accountId: string): Promise<number> {
    return Number(await q.value<number>(SQL.countWebhooks, [accountId]));
  }

  /** Active webhooks of the account that subscribe to this event, oldest first. */
  async subscribers(q: Sql, accountId: string, type: EventType): Promise<WebhookRecord[]> {
    return (await q.all<WebhookRow>(dialect(q, SQL.selectSubscribers), { accountId, type })).map(toWebhook);
  }

  async insertEmail(
    tx: Sql,
    email: {
      id: string;
      accountId: string;
      recipient: string;
      subject: string;
      body: string;
      createdAt: number;
    },
  ): Promise<void> {
    await tx.run(SQL.insertEmail, email);
  }

  emails(q: Sql, accountId: string, limit: number) {
    return q.all<{ id: string; recipient: string; subject: string; body: string; created_at: number }>(
      SQL.selectEmails,
      [accountId, limit],
    );
  }

  async deleteAccount(tx: Sql, accountId: string): Promise<void> {
    for (const statement of SQL.deleteAccount) await tx.run(statement, [accountId]);
  }
}
