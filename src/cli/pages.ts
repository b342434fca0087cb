import type { PageMeta } from '../core/paging.js';
import type { Answer, SandboxApi } from './sandbox-api.js';

/** A paged list's answer: `GET /_sandbox/webhooks`, `GET /_sandbox/faults`. */
export interface PagedList<T> {
  data: T[];
  meta: PageMeta;
}

/** The largest page the sandbox gives. */
const PAGE = 100;

/**
 * Every item of a paged list, newest first, following `meta.cursor` from page to page: what a person
 * looking for an id expects to see (an account has at most 100 of each, one page, unless it made more
 * before the caps). The answer reads as one page that held them all, for a script reading the JSON.
 */
export async function everyItem<T>(api: SandboxApi, path: string): Promise<Answer<PagedList<T>>> {
  const data: T[] = [];
  let answer: Answer<PagedList<T>>;
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({ limit: String(PAGE), ...(cursor ? { cursor } : {}) });
    answer = await api.get<PagedList<T>>(`${path}?${query}`);
    data.push(...answer.data.data);
    cursor = answer.data.meta.cursor;
  } while (cursor !== null);
  const all: PagedList<T> = { data, meta: { total: data.length, cursor: null, has_more: false } };
  return { status: answer.status, data: all, text: JSON.stringify(all) };
}
