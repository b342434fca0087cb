import './docs.css';
import { keepKey, looksLikeKey, sessionStore, startingKey } from './session.js';

/**
 * The API reference's own part: Swagger UI (served by the sandbox from `swagger-ui-dist`) over
 * `/openapi.json`, with "Try it out" authorised by the key the dashboard signed in with (the same
 * session storage entry), or by one typed into the bar above it.
 *
 * "Try it out" is the sandbox's own tool, not the merchant's client: its requests go to the `/v1`
 * routes' mount under `/_sandbox/try` (the same routes, key and scopes), which no rate limit, request
 * journal, integration report or fault rule sees. The request shown (its URL and curl) stays the
 * `/v1` one, which is what an integration sends.
 */

/**
 * Where the API is, and where "Try it out" sends what it would send there (the sandbox's
 * TRY_IT_OUT_PREFIX), from the page's own origin: behind a TLS-terminating proxy the document's server
 * may name another scheme than the page's, so the host and the path are what is matched.
 */
const apiPath = new URL('v1/', window.location.href).pathname;
const tryItOutPath = new URL('_sandbox/try/v1/', window.location.href).pathname;

function toTryItOut(address: string): string {
  const url = new URL(address, window.location.href);
  if (url.host !== window.location.host || !url.pathname.startsWith(apiPath)) return address;
  return new URL(tryItOutPath + url.pathname.slice(apiPath.length) + url.search, window.location.href).href;
}

interface SwaggerUi {
  preauthorizeApiKey(scheme: string, value: string): void;
}

interface SwaggerUiBundle {
  (options: Record<string, unknown>): SwaggerUi;
  presets: { apis: unknown };
}

const SwaggerUIBundle = (window as unknown as { SwaggerUIBundle?: SwaggerUiBundle }).SwaggerUIBundle;
const root = document.getElementById('swagger-ui');
const form = document.getElementById('docs-key') as HTMLFormElement | null;
const input = document.getElementById('docs-key-input') as HTMLInputElement | null;
const status = document.getElementById('docs-key-status');

const store = sessionStore();
let key = startingKey(window.location, store, (rest) =>
  window.history.replaceState(null, '', `${window.location.pathname}${window.location.search}${rest}`),
);

const say = (text: string) => {
  if (status) status.textContent = text;
};
const describeKey = (value: string) => `“Try it out” sends the key ending in …${value.slice(-4)}.`;

if (SwaggerUIBundle && root) {
  let ready = false;
  const ui = SwaggerUIBundle({
    url: new URL(root.dataset.openapi ?? 'openapi.json', window.location.href).href,
    domNode: root,
    deepLinking: true,
    // The validator badge would ask validator.swagger.io about the document: nothing leaves the sandbox.
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    requestInterceptor: (request: { url: string }) => {
      request.url = toTryItOut(request.url);
      return request;
    },
    showMutatedRequest: false,
    onComplete: () => {
      ready = true;
      if (key) ui.preauthorizeApiKey('bearerAuth', key);
    },
  });
  if (key) say(describeKey(key));

  form?.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = input?.value.trim() ?? '';
    if (!looksLikeKey(value)) {
      say('A sandbox key starts with svc_test_.');
      return;
    }
    key = value;
    keepKey(store, value);
    if (ready) ui.preauthorizeApiKey('bearerAuth', value);
    if (input) input.value = '';
    say(describeKey(value));
  });
} else {
  say('The reference could not load Swagger UI.');
}
