import type { Logger } from 'pino';
import type { Account } from '../accounts/store.js';
import type { Actor, Scope } from '../core/actor.js';

/** What the middleware puts on every request's context. */
export interface AuthContext {
  account: Account;
  keyId: string;
  scopes: readonly Scope[];
  /** The account's clock read once per request, so one request sees one instant. */
  now: number;
}

export interface AppEnv {
  Variables: {
    auth: AuthContext;
    logger: Logger;
    /** Set when an injected fault dropped the connection: there is no answer to journal. */
    dropped: boolean;
  };
}

/** The domain's view of a request: which account acts, and at what instant of its clock. */
export const actorOf = (auth: AuthContext): Actor => ({ accountId: auth.account.id, now: auth.now });
