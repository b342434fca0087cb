import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { testConfig } from '../src/config/index.js';
import { type RunningSandbox, startServer } from '../src/server.js';

/**
 * What the browser tests and the screenshot script share: the real server started in this process
 * on a free loopback port (the one place they import it), a headless Chromium (Debian's `chromium`
 * package, driven by playwright-core), and pages that may reach the sandbox and nothing else.
 */

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM)
    ? undefined
    : `${CHROMIUM} is missing: install Debian's chromium package (.ci/run does when it runs as root), or set CHROMIUM_PATH`;
}

/** The sandbox, listening on a free loopback port, in memory. */
export function startTestServer(): Promise<RunningSandbox> {
  return startServer(testConfig());
}

/**
 * Chromium as the tests run it: headless, in a temporary profile of its own (fresh each launch), and
 * with the background traffic it makes by itself (updates, sync, QUIC probes) turned off.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Something a page did that fails a test: a script error, a console error, or a request elsewhere. */
export interface Problem {
  kind: 'page error' | 'console error' | 'request elsewhere';
  text: string;
  url: string;
}

export interface GuardedPage {
  context: BrowserContext;
  page: Page;
  /** Everything wrong so far; tests expect it empty (or exactly the API errors they caused). */
  problems: Problem[];
}

/**
 * A page in a fresh context (its own storage) whose every request goes through a check: the
 * sandbox's own origin passes, anything else is recorded as a problem and refused before it leaves
 * the browser. Script errors and console errors are recorded too.
 */
export async function guardedPage(
  browser: Browser,
  origin: string,
  viewport = { width: 1280, height: 800 },
): Promise<GuardedPage> {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  const problems: Problem[] = [];
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.origin === origin) return route.continue();
    problems.push({ kind: 'request elsewhere', text: url.href, url: url.href });
    return route.abort('blockedbyclient');
  });
  const page = await context.newPage();
  page.on('pageerror', (error) =>
    problems.push({ kind: 'page error', text: error.message, url: page.url() }),
  );
  page.on('console', (message) => {
    if (message.type() === 'error') {
      problems.push({ kind: 'console error', text: message.text(), url: message.location().url });
    }
  });
  return { context, page, problems };
}

/** A client of the running sandbox's API with one key, for setting the scene and checking it. */
export function apiClient(origin: string, key: string) {
  return async <T = any>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: T }> => {
    const response = await fetch(`${origin}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, json: (text ? JSON.parse(text) : undefined) as T };
  };
}

/** A new account of the running sandbox, with its clock frozen so that nothing moves unless a test moves it. */
export async function newFrozenAccount(origin: string, name = 'QA') {
  const created = await fetch(`${origin}/_sandbox/accounts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  const account = (await created.json()) as { id: string; api_key: string };
  const api = apiClient(origin, account.api_key);
  await api('POST', '/_sandbox/clock', { frozen: true });
  return { id: account.id, key: account.api_key, api };
}
