import type { HttpBindings } from '@hono/node-server';
import type { Caller } from '../core/actor.js';
import type { ApiError } from '../core/errors.js';

/** The app's environment: what Node's adapter binds, and what middleware puts on each request. */
export interface AppEnv {
  /**
   * Node's request and response (`@hono/node-server`'s `HttpBindings`). Absent when the app is called
   * in-process (`app.request`), hence partial: see node-adapter.ts, the one place that reaches for them.
   */
  Bindings: Partial<HttpBindings>;
  Variables: {
    /** Who is calling: the key's account, the key, its scopes, and the account clock read once. */
    caller: Caller;
    /** The request body as read by `readRequest` (POST, PUT and PATCH only), before anything else ran. */
    bodyText: string;
    /** Why that body cannot be read as the JSON it was sent as (not UTF-8, compressed); said once the caller is known. */
    bodyRefusal: ApiError;
    /** Set when an injected fault dropped the connection: there is no answer to journal. */
    dropped: boolean;
    /**
     * Whether the request may do what needs the admin token: it carries the server's token in
     * `X-Sandbox-Admin-Token`, or the server has none (see `readAdminToken`).
     */
    admin: boolean;
    /** The error the request was answered with, when it was (see `respondWithError`). */
    answeredError: ApiError;
    /** Headers for the answer, whatever it is, and the answer made with them (answer-headers.ts). */
    answerHeaders: Record<string, string>;
    answeredWith: Response;
  };
}
