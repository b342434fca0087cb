import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
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
 * with the background traffic it makes by itself (updates, sync, QUIC probes) turned off; `extraArgs`
 * adds switches (a host resolver rule, say).
 */
export function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
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
      ...extraArgs,
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
  viewport: Viewport = { width: 1280, height: 800 },
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

/** A viewport: the page's width and height in CSS pixels. */
export interface Viewport {
  width: number;
  height: number;
}

/** What a browser test file works with: see browserSession. */
export interface BrowserSession {
  /** The sandbox's origin (`http://127.0.0.1:<port>`), once the file's tests run. */
  readonly origin: string;
  readonly browser: Browser;
  /** A guarded page in a fresh context, closed after the test and its problems judged then. */
  page(viewport?: Viewport): Promise<Page>;
  /** `page()`, gone to `path` on the sandbox. */
  open(path: string, viewport?: Viewport): Promise<Page>;
  /** The dashboard signed in through a link with `key`, then on `screen` (a fragment such as `#/clock`). */
  signedIn(key: string, screen?: string, viewport?: Viewport): Promise<Page>;
  /**
   * Failed loads of these URLs are the test's own doing (an API error it causes on purpose): the
   * browser's console errors about them do not fail it. For the current test only.
   */
  expectFailedLoads(...urls: RegExp[]): void;
  /** Closed after the test, whatever its outcome (a webhook receiver). */
  closeAfterTest<T extends { close(): Promise<unknown> }>(closable: T): T;
}

/**
 * The one server and one Chromium of a browser test file, started before its first test and closed
 * after its last, and the pages its tests open. After each test, every page it opened is closed and
 * anything that went wrong on them (see guardedPage) fails it, but for the failed loads it said to
 * expect. Call it at the top of the file: it registers the file's hooks.
 */
export function browserSession(options: { timeoutMs?: number } = {}): BrowserSession {
  const timeoutMs = options.timeoutMs ?? 10_000;
  let server: RunningSandbox | undefined;
  let browser: Browser | undefined;
  const pages: GuardedPage[] = [];
  const closables: { close(): Promise<unknown> }[] = [];
  let expectedFailures: RegExp[] = [];

  beforeAll(async () => {
    const missing = chromiumMissing();
    if (missing) throw new Error(missing);
    [server, browser] = await Promise.all([startTestServer(), launchChromium()]);
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  afterEach(async () => {
    const problems: Problem[] = [];
    for (const guarded of pages.splice(0)) {
      problems.push(...guarded.problems);
      await guarded.context.close();
    }
    await Promise.all(closables.splice(0).map((closable) => closable.close()));
    const expected = expectedFailures;
    expectedFailures = [];
    const unexpected = problems.filter(
      (problem) =>
        !(
          problem.kind === 'console error' &&
          /^Failed to load resource/.test(problem.text) &&
          expected.some((pattern) => pattern.test(problem.url))
        ),
    );
    expect(unexpected).toEqual([]);
  });

  const running = () => {
    if (!server || !browser) throw new Error('the browser session starts before the first test');
    return { server, browser };
  };

  const session: BrowserSession = {
    get origin() {
      return running().server.origin;
    },
    get browser() {
      return running().browser;
    },
    async page(viewport) {
      const guarded = await guardedPage(running().browser, session.origin, viewport);
      guarded.context.setDefaultTimeout(timeoutMs);
      pages.push(guarded);
      return guarded.page;
    },
    async open(path, viewport) {
      const page = await session.page(viewport);
      await page.goto(`${session.origin}${path}`);
      return page;
    },
    async signedIn(key, screen, viewport) {
      const page = await session.open(`/dashboard#key=${key}`, viewport);
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      if (screen) {
        await page.evaluate((hash) => {
          window.location.hash = hash;
        }, screen);
      }
      return page;
    },
    expectFailedLoads(...urls) {
      expectedFailures.push(...urls);
    },
    closeAfterTest(closable) {
      closables.push(closable);
      return closable;
    },
  };
  return session;
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
