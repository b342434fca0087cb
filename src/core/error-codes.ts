/**
 * Every error code the sandbox answers with, its status and when. The OpenAPI document's `Error`
 * schema enumerates these, and each route's responses name the ones it can give, so a typed client
 * can switch over `error.code`. `test/openapi.test.ts` checks this list against the codes the source
 * throws, both ways.
 *
 * Two codes of the source are left out because no client ever reads them: `client_closed_request`
 * (the client left before its request was read) and `connection_dropped` (an injected fault cut the
 * connection instead of answering).
 */
export const ERROR_CODES = {
  invalid_request: {
    status: 400,
    when: "Node's HTTP parser refused the request (its request line or a header)",
  },
  https_port_needs_tls: {
    status: 400,
    when: 'plain HTTP sent to the HTTPS port (the connection is closed after this answer)',
  },
  invalid_json: { status: 400, when: 'the body is not valid JSON, or not a JSON object' },
  unsupported_content_type: { status: 400, when: 'a body sent without `Content-Type: application/json`' },
  invalid_parameter: { status: 400, when: 'a bad query or path parameter; `field` names it' },
  request_too_large: { status: 400, when: 'a body over 1 MiB' },
  missing_api_key: { status: 401, when: 'no `Authorization: Bearer` header' },
  invalid_api_key: { status: 401, when: 'an unknown, malformed or revoked key, or a live key' },
  insufficient_scope: { status: 403, when: 'the key lacks a scope this request needs; the message names it' },
  admin_token_required: {
    status: 403,
    when: "changing an account's plan or rate limiting on a sandbox with an admin token, without it (`X-Sandbox-Admin-Token`)",
  },
  host_not_allowed: {
    status: 403,
    when: 'a sandbox on a loopback address got a request for another host name (`--allowed-host` adds names)',
  },
  cross_site_request: {
    status: 403,
    when: 'a browser marked the request `Sec-Fetch-Site: cross-site` (a page of another site made it)',
  },
  https_required: { status: 403, when: 'plain HTTP to `/v1` while the sandbox runs with `--strict-https`' },
  url_expired: { status: 403, when: 'a pre-signed label URL past its expiry' },
  invalid_signature: { status: 403, when: 'a pre-signed label URL that was altered' },
  not_found: { status: 404, when: 'no such resource in this account' },
  route_not_found: { status: 404, when: 'no route has this path' },
  method_not_allowed: {
    status: 405,
    when: 'the path does not take this method; `Allow` lists those it takes',
  },
  request_timeout: { status: 408, when: 'the request did not arrive in time' },
  expectation_failed: { status: 417, when: 'an `Expect` header other than `100-continue`' },
  missing_field: { status: 422, when: 'a required field is missing; `field` names it' },
  invalid_field: { status: 422, when: 'a field has a wrong value; `field` names it' },
  invalid_address: { status: 422, when: 'the destination cannot be verified; `field` names the part' },
  invalid_carrier: { status: 422, when: 'an unknown carrier' },
  invalid_service: { status: 422, when: 'a service that the carrier does not offer' },
  shipment_not_cancellable: { status: 422, when: 'the shipment is past `created` and `label_generated`' },
  label_already_exists: { status: 422, when: 'the shipment already has an active label' },
  shipment_cancelled: { status: 422, when: 'the shipment is cancelled' },
  label_already_voided: { status: 422, when: 'the label is voided already' },
  void_window_expired: { status: 422, when: 'the label is too old to void' },
  label_already_scanned: { status: 422, when: 'the carrier has scanned the parcel' },
  no_active_label: { status: 422, when: 'the shipment has no active label, so no tracking to change' },
  invalid_transition: { status: 422, when: 'the parcel cannot reach that status from where it is' },
  webhook_deleted: { status: 422, when: 'the webhook of that delivery was deleted' },
  limit_reached: {
    status: 422,
    when: 'the account already has as many webhooks, fault rules or active keys as it may (100 of each); the message names the limit',
  },
  rate_limit_exceeded: { status: 429, when: 'a rate limit is reached; `Retry-After` says when to retry' },
  headers_too_large: { status: 431, when: 'the request headers are too large' },
  internal_error: { status: 500, when: 'anything unexpected (no stack trace in the body)' },
  service_unavailable: {
    status: 503,
    when: 'the database cannot be reached (PostgreSQL), or a fault rule (`POST /_sandbox/faults`) injects it',
  },
  insufficient_storage: { status: 507, when: "the sandbox's disk is full; nothing was changed" },
  fault_injected: {
    status: undefined,
    when: 'a fault rule injected this 4xx status; a rule may also set a code of its own, outside this list',
  },
} as const satisfies Record<string, { status: number | undefined; when: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export const ERROR_CODE_NAMES = Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]];
