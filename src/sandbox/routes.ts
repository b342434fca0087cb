import { createRoute } from '@hono/zod-openapi';
import { createAccount } from '../accounts/accounts.js';
import type { Account } from '../accounts/store.js';
import { advanceClock, readClock, setClock } from '../clock/account-clock.js';
import { parseDuration } from '../clock/clock.js';
import { ApiError, invalidParameter } from '../core/errors.js';
import { parseLimit } from '../core/paging.js';
import { formatTimestamp } from '../core/time.js';
import { EVENT_TYPES } from '../events/store.js';
import {
  BEARER_SECURITY,
  COMMON_ERRORS,
  createRouter,
  errorResponses,
  jsonBody,
  jsonResponse,
} from '../http/router.js';
import type { State } from '../state.js';
import { findScenario } from '../tracking/service.js';
import {
  AccountCreatedSchema,
  AccountSchema,
  AccountSettingsSchema,
  AdvanceClockSchema,
  AdvancedClockSchema,
  ClockSchema,
  ClockSettingsSchema,
  CreateAccountSchema,
  EventListQuerySchema,
  EventListSchema,
} from './schema.js';

const security = BEARER_SECURITY;
const tags = ['Sandbox controls'];
const SANDBOX_ERRORS = [400, 401, 500] as const;

/**
 * The sandbox's own controls under /_sandbox. Each acts on the account of the key that calls it
 * (any valid key of the account, whatever its scopes); creating an account needs no key.
 */
export function sandboxRoutes(state: State) {
  const router = createRouter();
  const { realNow } = state;

  router.openapi(
    createRoute({
      method: 'post',
      path: '/accounts',
      tags,
      summary: 'Create an isolated account with an all-scopes test key',
      request: { body: jsonBody(CreateAccountSchema) },
      responses: {
        201: jsonResponse(AccountCreatedSchema, 'The account and its key'),
        ...errorResponses(400, 422, 500),
      },
    }),
    (c) => {
      const { account, apiKey } = createAccount(
        state.accounts,
        c.req.valid('json'),
        realNow(),
        state.config.clockSpeed,
      );
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

  router.openapi(
    createRoute({
      method: 'get',
      path: '/account',
      tags,
      summary: 'The account of the calling key',
      security,
      responses: { 200: jsonResponse(AccountSchema, 'The account'), ...errorResponses(...SANDBOX_ERRORS) },
    }),
    (c) => c.json(presentAccount(c.get('auth').account, state.config.webhookRetries), 200),
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/account',
      tags,
      summary: "Change the account's plan or default scenario",
      security,
      request: { body: jsonBody(AccountSettingsSchema) },
      responses: {
        200: jsonResponse(AccountSchema, 'The account'),
        ...errorResponses(...SANDBOX_ERRORS, 422),
      },
    }),
    (c) => {
      const change = c.req.valid('json');
      const { account } = c.get('auth');
      if (change.default_scenario !== undefined)
        findScenario(state, change.default_scenario, 'default_scenario');
      const ladder = change.webhook_retry_schedule;
      const updated = {
        ...account,
        plan: change.plan ?? account.plan,
        defaultScenario: change.default_scenario ?? account.defaultScenario,
        rateLimitsEnabled: change.rate_limits ?? account.rateLimitsEnabled,
        webhookRetrySchedule:
          ladder === undefined
            ? account.webhookRetrySchedule
            : ladder === null
              ? null
              : ladder.map((delay, i) => parseDuration(delay, `webhook_retry_schedule.${i}`)),
      };
      state.accounts.saveSettings(updated);
      return c.json(presentAccount(updated, state.config.webhookRetries), 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/clock',
      tags,
      summary: "Read the account's clock",
      security,
      responses: { 200: jsonResponse(ClockSchema, 'The clock'), ...errorResponses(...SANDBOX_ERRORS) },
    }),
    (c) => c.json(readClock(state, c.get('auth').account.id, realNow()), 200),
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/clock',
      tags,
      summary: 'Set the clock speed, freeze or unfreeze it',
      security,
      request: { body: jsonBody(ClockSettingsSchema) },
      responses: { 200: jsonResponse(ClockSchema, 'The clock'), ...errorResponses(...SANDBOX_ERRORS, 422) },
    }),
    (c) => c.json(setClock(state, c.get('auth').account.id, c.req.valid('json'), realNow()), 200),
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/clock/advance',
      tags,
      summary: 'Move the clock forward and run everything that falls due',
      security,
      request: { body: jsonBody(AdvanceClockSchema) },
      responses: {
        200: jsonResponse(AdvancedClockSchema, 'The clock, and what ran'),
        ...errorResponses(...SANDBOX_ERRORS, 422),
      },
    }),
    async (c) => {
      const { by, to } = c.req.valid('json');
      if (by !== undefined && to !== undefined) {
        throw new ApiError(422, 'invalid_field', "Give either 'by' or 'to', not both.", { field: 'to' });
      }
      const request = to !== undefined ? { to } : by !== undefined ? { by } : undefined;
      if (!request)
        throw new ApiError(422, 'missing_field', "'by' (a duration) or 'to' (a timestamp) is required.", {
          field: 'by',
        });
      return c.json(await advanceClock(state, c.get('auth').account.id, request, realNow), 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/events',
      tags,
      summary: "The account's events, newest first",
      security,
      request: { query: EventListQuerySchema },
      responses: { 200: jsonResponse(EventListSchema, 'Events'), ...errorResponses(...COMMON_ERRORS) },
    }),
    (c) => {
      const { event, limit } = c.req.valid('query');
      if (event !== undefined && !(EVENT_TYPES as readonly string[]).includes(event)) {
        throw invalidParameter('event', `'event' must be one of ${EVENT_TYPES.join(', ')}.`);
      }
      const take = parseLimit(limit, { default: 100, max: 1000 });
      return c.json({ data: state.events.list(c.get('auth').account.id, { type: event, limit: take }) }, 200);
    },
  );

  return router;
}

function presentAccount(account: Account, serverLadder: readonly number[]) {
  return {
    id: account.id,
    name: account.name,
    plan: account.plan,
    default_scenario: account.defaultScenario,
    webhook_retry_schedule: (account.webhookRetrySchedule ?? serverLadder).map((ms) => ms / 1000),
    rate_limits: account.rateLimitsEnabled,
    created_at: formatTimestamp(account.createdAt),
  };
}
