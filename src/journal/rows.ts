import type { JournaledRequest } from './journal.js';

/**
 * A row of `request_journal` as read (see migrations.ts): an account's requests in one batch a replica
 * wrote, one line of JSON each, in the order recorded.
 */
export interface JournalRow {
  seq: number;
  requests: string;
}

/** A request read from the journal's table, with its row's seq. */
export interface RowRequest {
  seq: number;
  request: JournaledRequest;
}

/** The rows' requests, in the order written. */
export function requestsOf(rows: readonly JournalRow[]): RowRequest[] {
  const requests: RowRequest[] = [];
  for (const { seq, requests: lines } of rows)
    for (const line of lines.split('\n'))
      requests.push({ seq, request: JSON.parse(line) as JournaledRequest });
  return requests;
}
