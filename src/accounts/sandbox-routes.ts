import { createRoute, z } from '@hono/zod-openapi';
import { formatTimestamp } from '../core/time.js';
import {
  ADMIN_TOKEN_HEADER,
  readAdminToken,
  requireAdminToken,
  requireFullKey,
  requireScope,
} from '../http/auth.js';
import { requireJsonObjectBody } from '../http/body.js';
import {
  BEARER_SECURITY,
  controlErrors,
  createRouter,
  ErrorCodes,
  idParam,
  jsonBody,
  jsonResponse,
  openErrors,
} from '../http/router.js';
import {
  AccountCreatedSchema,
  AccountSchema,
  AccountSettingsSchema,
  CreateAccountSchema,
  CreatedKeySchema,
  CreateKeySchema,
  KeyListSchema,
  RevokedKeySchema,
} from './schema.js';
import type { AccountService } from './service.js';

const security = BEARER_SECURITY;
const tags = ['Sandbox controls'];

/** `POST /_sandbox/accounts`: open, unless the server has an admin token. */
export function accountCreationRoutes(accounts: AccountService, adminToken: string | undefined) {
  const router = createRouter();
  router.openapi(
    createRoute({
      method: 'post',
      path: '/accounts',
      operationId: 'createAccount',
      tags,
      summary: 'Create an isolated account with an all-scopes test key',
      description:
        'Open, unless the sandbox runs with `--admin-token`: then it takes that token as a Bearer token ' +
        '(`401 missing_api_key` / `invalid_api_key` without it).',
      // No API key: open, or the server's admin token as a Bearer token when it has one.
      security: [],
      // Mounted ahead of the key check: it checks the admin token, then the body, itself.
      middleware: [requireAdminToken(adminToken), requireJsonObjectBody] as const,
      request: { body: jsonBody(CreateAccountSchema) },
      responses: {
        201: jsonResponse(AccountCreatedSchema, 'The account and its key'),
        ...openErrors(
          ...ErrorCodes.body,
          ...ErrorCodes.validation,
          // A NUL character in the query: refused under /_sandbox ahead of every control.
          ...ErrorCodes.query,
          'missing_api_key',
          'invalid_api_key',
          ...ErrorCodes.write,
        ),
      },
    }),
    async (c) => {
      const { account, apiKey } = await accounts.createAccount(c.req.valid('json'));
      return c.json(
        {
          id: account.id,
          name: account.name,
          plan: account.plan,
          created_at: formatTimestamp(account.createdAt),
          api_key: apiKey,
        },
        201,
      );
    },
  );
  return router;
}

const AdminTokenHeader = z.object({
  [ADMIN_TOKEN_HEADER]: z.string().optional().openapi({
    description:
      "The sandbox's admin token, beside the account's key: needed to change `plan` or `rate_limits` when the sandbox runs with `--admin-token`",
  }),
});

/** The calling key's account: its settings, its keys, and a reset. */
export function accountControlRoutes(
  accounts: AccountService,
  resetAccount: (accountId: string) => Promise<void>,
  adminToken: string | undefined,
) {
  const router = createRouter();

  router.openapi(
    createRoute({
      method: 'get',
      path: '/account',
      operationId: 'getAccount',
      tags,
      summary: 'The account of the calling key',
      security,
      middleware: [requireScope('shipments:read')] as const,
      responses: { 200: jsonResponse(AccountSchema, 'The account'), ...controlErrors() },
    }),
    async (c) => c.json(accounts.present(await accounts.get(c.get('caller').accountId)), 200),
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/account',
      operationId: 'updateAccount',
      tags,
      summary: "Change the account's plan, default scenario, webhook retries or rate limiting",
      description:
        'On a sandbox with `--admin-token`, changing `plan` or `rate_limits` also needs that token in ' +
        "`X-Sandbox-Admin-Token` (`403 admin_token_required` without it, or with a wrong one); the other settings don't.",
      security,
      middleware: [requireFullKey, readAdminToken(adminToken)] as const,
      request: { body: jsonBody(AccountSettingsSchema), headers: AdminTokenHeader },
      responses: {
        200: jsonResponse(AccountSchema, 'The account'),
        ...controlErrors(
          ...ErrorCodes.body,
          ...ErrorCodes.validation,
          'admin_token_required',
          ...ErrorCodes.write,
        ),
      },
    }),
    async (c) =>
      c.json(
        accounts.present(
          await accounts.updateSettings(c.get('caller').accountId, c.req.valid('json'), {
            admin: c.get('admin'),
          }),
        ),
        200,
      ),
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/keys',
      operationId: 'createKey',
      tags,
      summary: 'Create an API key; its value is shown once',
      security,
      middleware: [requireFullKey] as const,
      request: { body: jsonBody(CreateKeySchema) },
      responses: {
        201: jsonResponse(CreatedKeySchema, 'The key and its value'),
        ...controlErrors(...ErrorCodes.body, ...ErrorCodes.validation, 'limit_reached', ...ErrorCodes.write),
      },
    }),
    async (c) => c.json(await accounts.createKey(c.get('caller'), c.req.valid('json')), 201),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/keys',
      operationId: 'listKeys',
      tags,
      summary: "The account's keys, newest first (the last four characters only)",
      security,
      middleware: [requireScope('shipments:read')] as const,
      responses: { 200: jsonResponse(KeyListSchema, 'Keys'), ...controlErrors() },
    }),
    async (c) =>
      c.json(
        { data: (await accounts.keys(c.get('caller').accountId)).map((key) => accounts.presentKey(key)) },
        200,
      ),
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/keys/{id}',
      operationId: 'revokeKey',
      tags,
      summary: 'Revoke a key, at once (a full key revokes any key of the account; any key revokes itself)',
      security,
      request: { params: idParam() },
      responses: {
        200: jsonResponse(RevokedKeySchema, 'Revoked'),
        ...controlErrors(...ErrorCodes.lookup, ...ErrorCodes.write),
      },
    }),
    async (c) => c.json(await accounts.revokeKey(c.get('caller'), c.req.valid('param').id), 200),
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/reset',
      operationId: 'resetAccount',
      tags,
      summary: "Remove the account's data and reset its clock; keys and settings stay",
      security,
      middleware: [requireFullKey] as const,
      responses: {
        200: jsonResponse(z.object({ reset: z.literal(true) }).openapi('ResetDone'), 'Reset'),
        ...controlErrors(...ErrorCodes.body, ...ErrorCodes.write),
      },
    }),
    async (c) => {
      await resetAccount(c.get('caller').accountId);
      return c.json({ reset: true as const }, 200);
    },
  );

  return router;
}
