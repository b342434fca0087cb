/**
 * The sandbox's own tools (the dashboard) act through `/_sandbox` twins of a few `/v1` routes, so that
 * nothing they do is mistaken for the merchant's client: a twin takes the same body and gives the same
 * answer, errors and events as the route it twins (it calls the same service), but it counts in no
 * rate limit, is kept in no request journal or integration report, and no fault rule applies to it.
 * It checks the same scope. A path under `/_sandbox` is no header a client could add to skip its
 * limits: a client that called it would be calling another route, visibly.
 */
export function twinDescription(apiRoute: string): string {
  return (
    `The same as \`${apiRoute}\` (body, answer, errors, events and scope), for the sandbox's own tools such as ` +
    'the dashboard: it is not rate-limited, the request journal and the integration report do not see it, ' +
    'and fault rules do not apply. An integration calls the `/v1` route.'
  );
}
