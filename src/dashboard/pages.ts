/**
 * The two pages the sandbox serves to browsers. Each is a shell: the dashboard's screens are drawn
 * by its script, the reference by Swagger UI. Every path is relative to the page, so both work
 * behind a proxy that serves the sandbox under a path of its own.
 */

/**
 * Whatever the pages load comes from the sandbox itself, and they may call nothing else: with this
 * policy a page cannot reach another host even if something tried (the tests check that nothing
 * does). No inline script anywhere; Swagger UI sets inline styles and shows `data:` icons.
 */
const POLICY = {
  dashboard:
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  docs:
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
} as const;

export function pageHeaders(page: keyof typeof POLICY): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': POLICY[page],
    // The key lives in the page's session storage; the page sends no referrer, and is never framed.
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-cache',
  };
}

export const DASHBOARD_PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Shipping Sandbox dashboard</title>
    <link rel="icon" href="dashboard/assets/icon.svg" type="image/svg+xml">
    <link rel="stylesheet" href="dashboard/assets/app.css">
  </head>
  <body>
    <div id="app"><p class="loading">Loading the dashboard…</p></div>
    <noscript>The dashboard needs JavaScript. The API reference is at <a href="docs">docs</a>.</noscript>
    <script type="module" src="dashboard/assets/app.js"></script>
  </body>
</html>
`;

export const DOCS_PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Shipping Sandbox API reference</title>
    <link rel="icon" href="dashboard/assets/icon.svg" type="image/svg+xml">
    <link rel="stylesheet" href="docs/assets/swagger-ui.css">
    <link rel="stylesheet" href="dashboard/assets/docs.css">
  </head>
  <body>
    <header class="docs-bar">
      <a href="dashboard">Back to the dashboard</a>
      <form id="docs-key" class="docs-key">
        <label for="docs-key-input">API key for “Try it out”</label>
        <input id="docs-key-input" name="key" type="password" autocomplete="off" spellcheck="false" placeholder="svc_test_…">
        <button type="submit">Use this key</button>
        <span id="docs-key-status" role="status"></span>
      </form>
    </header>
    <main id="swagger-ui" data-openapi="./openapi.json"></main>
    <script src="docs/assets/swagger-ui-bundle.js"></script>
    <script type="module" src="dashboard/assets/docs.js"></script>
  </body>
</html>
`;

/** The sandbox's icon: a parcel. */
export const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect x="3" y="8" width="26" height="20" rx="2" fill="#b7791f"/><path d="M3 13h26M13 8v8l3-2 3 2V8" stroke="#744210" stroke-width="2" fill="none"/></svg>`;
