import './docs.css';
import { keepKey, looksLikeKey, sessionStore, startingKey } from './session.js';

/**
 * The API reference's own part: Swagger UI (served by the sandbox from `swagger-ui-dist`) over
 * `/openapi.json`, with "Try it out" authorised by the key the dashboard signed in with (the same
 * session storage entry), or by one typed into the bar above it.
 */

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
